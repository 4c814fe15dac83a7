// Workload 3, mixed sizes: each of THREADS threads keeps a window of WINDOW live objects of
// 8-1024 bytes (log-uniform) and, OPS times, replaces a random one: random lifetimes. Threads
// share nothing but the allocator; work is per thread (weak scaling), so with enough cores the
// time stays flat as threads are added.
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

std::uint64_t run(long seed, long window, long ops) {
  wl::Rng rng(static_cast<std::uint64_t>(seed));
  struct Slot {
    unsigned char* p = nullptr;
    std::size_t size = 0;
  };
  std::vector<Slot> slots(static_cast<std::size_t>(window));
  std::uint64_t checksum = 0;
  for (long op = 0; op < ops; ++op) {
    Slot& slot = slots[rng.below(static_cast<std::uint64_t>(window))];
    if (slot.p) {
      checksum += slot.p[0] + slot.p[slot.size - 1];
      wl::free(slot.p);
    }
    slot.size = rng.size_between(8, 1024);
    slot.p = static_cast<unsigned char*>(wl::malloc(slot.size));
    if (!slot.p) std::abort();
    slot.p[0] = static_cast<unsigned char>(op);
    slot.p[slot.size - 1] = static_cast<unsigned char>(slot.size);
  }
  for (Slot& slot : slots) {
    if (slot.p) checksum += slot.p[0] + slot.p[slot.size - 1];
    wl::free(slot.p);
  }
  return checksum;
}

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long threads = args.get("threads", 1, 1, 1);
  const long window = args.get("window", 1000, 10000, 10000);
  const long ops = args.get("ops", 20000, 1000000, 8000000);

  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (long t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sums[static_cast<std::size_t>(t)] = run(t + 1, window, ops); });
  for (auto& thread : pool) thread.join();
  std::uint64_t checksum = 0;
  for (auto s : sums) checksum = checksum * 31 + s;
  wl::print_checksum("mixed", checksum);
}
