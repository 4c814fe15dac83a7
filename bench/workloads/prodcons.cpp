// Workload 4, producer/consumer: one thread allocates batches of BATCH blocks (16-256 bytes),
// another frees them: every free is a remote free. At most DEPTH batches are in flight.
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

struct Queue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::vector<unsigned char*>> batches;
};

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long batches = args.get("batches", 20, 1000, 8000);
  const long batch = args.get("batch", 1000, 1000, 1000);
  const std::size_t depth = static_cast<std::size_t>(args.get("depth", 4, 4, 4));

  Queue queue;
  std::uint64_t checksum = 0;
  std::thread consumer([&] {
    for (long b = 0; b < batches; ++b) {
      std::vector<unsigned char*> blocks;
      {
        std::unique_lock lock(queue.mutex);
        queue.changed.wait(lock, [&] { return !queue.batches.empty(); });
        blocks = std::move(queue.batches.front());
        queue.batches.pop_front();
      }
      queue.changed.notify_all();
      for (unsigned char* p : blocks) {
        checksum += p[0];
        wl::free(p);
      }
    }
  });

  wl::Rng rng(4);
  for (long b = 0; b < batches; ++b) {
    std::vector<unsigned char*> blocks(static_cast<std::size_t>(batch));
    for (long i = 0; i < batch; ++i) {
      auto* p = static_cast<unsigned char*>(wl::malloc(rng.size_between(16, 256)));
      if (!p) std::abort();
      p[0] = static_cast<unsigned char>(i + b);
      blocks[static_cast<std::size_t>(i)] = p;
    }
    std::unique_lock lock(queue.mutex);
    queue.changed.wait(lock, [&] { return queue.batches.size() < depth; });
    queue.batches.push_back(std::move(blocks));
    lock.unlock();
    queue.changed.notify_all();
  }
  consumer.join();
  wl::print_checksum("prodcons", checksum);
}
