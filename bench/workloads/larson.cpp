// Workload 5, a Larson-style server simulation: THREADS threads each own a region of SLOTS
// slots and replace random slots with blocks of random size (8-512 bytes), OPS per epoch. After
// every epoch (a barrier) the regions move on to the next thread, so blocks allocated by one
// thread are freed by another, as when a server hands requests between workers.
#include <cstdlib>
#include <thread>
#include <vector>

#include "common.hpp"
#include "waiting.hpp"

namespace {

struct Slot {
  unsigned char* p = nullptr;
  std::size_t size = 0;
};

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long threads = args.get("threads", 2, 2, 2);
  const long slots = args.get("slots", 1000, 5000, 5000);
  const long epochs = args.get("epochs", 4, 20, 40);
  const long ops = args.get("ops", 5000, 50000, 150000);  // per thread per epoch

  std::vector<std::vector<Slot>> regions(static_cast<std::size_t>(threads),
                                         std::vector<Slot>(static_cast<std::size_t>(slots)));
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads));
  wl::Barrier sync(threads);
  std::vector<std::thread> pool;
  for (long t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      wl::Rng rng(static_cast<std::uint64_t>(t + 100));
      std::uint64_t sum = 0;
      for (long e = 0; e < epochs; ++e) {
        auto& region = regions[static_cast<std::size_t>((t + e) % threads)];
        for (long op = 0; op < ops; ++op) {
          Slot& slot = region[rng.below(static_cast<std::uint64_t>(slots))];
          if (slot.p) {
            sum += slot.p[0] ^ slot.p[slot.size - 1];
            wl::free(slot.p);
          }
          slot.size = rng.size_between(8, 512);
          slot.p = static_cast<unsigned char*>(wl::malloc(slot.size));
          if (!slot.p) std::abort();
          slot.p[0] = static_cast<unsigned char>(op);
          slot.p[slot.size - 1] = static_cast<unsigned char>(e);
        }
        sync.arrive_and_wait();
      }
      sums[static_cast<std::size_t>(t)] = sum;
    });
  }
  for (auto& thread : pool) thread.join();
  std::uint64_t checksum = 0;
  for (auto s : sums) checksum = checksum * 31 + s;
  for (auto& region : regions)
    for (Slot& slot : region) wl::free(slot.p);
  wl::print_checksum("larson", checksum);
}
