// PoolResource's fast paths as a pmr container reaches them, for
// tests/toolkit/pair_instructions.sh, which counts their instructions under callgrind:
// `pool_resource_pairs ROUNDS` allocates 10,000 blocks of 16 bytes (an unordered_map<int, int>'s
// nodes) through a std::pmr::memory_resource*, then deallocates them in one random order (a fixed
// seed), ROUNDS times. The pool grows over several chunks in the first round; from the second,
// every call takes the fast path.
#include <poolalloc/pmr.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory_resource>
#include <numeric>
#include <random>
#include <vector>

namespace {

constexpr int kBlocks = 10'000;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const long rounds = std::atol(argv[1]);
  std::vector<int> order(kBlocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(2024));
  poolalloc::PoolResource pool;
  // Reached through a pointer the compiler cannot see through, as a container's virtual calls.
  std::pmr::memory_resource* volatile opaque = &pool;
  std::pmr::memory_resource* resource = opaque;
  std::vector<void*> blocks(kBlocks);
  for (long round = 0; round < rounds; ++round) {
    for (void*& block : blocks) block = resource->allocate(16, 8);
    for (int i : order) resource->deallocate(blocks[i], 16, 8);
  }
  return pool.used() == 0 ? 0 : 1;
}
