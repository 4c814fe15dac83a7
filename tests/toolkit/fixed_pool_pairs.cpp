// FixedPool's fast path in a hot loop, for tests/toolkit/pair_instructions.sh, which
// counts its instructions under callgrind: `fixed_pool_pairs N` allocates a 64-byte block and
// deallocates it again, N times (after the first pair, allocate takes the block from the free
// list).
#include <poolalloc/fixed_pool.hpp>

#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const long pairs = std::atol(argv[1]);
  poolalloc::FixedPool pool(64, 1024);
  void* volatile block = nullptr;  // keeps each pair from being optimised away
  for (long i = 0; i < pairs; ++i) {
    block = pool.allocate();
    pool.deallocate(block);
  }
  return 0;
}
