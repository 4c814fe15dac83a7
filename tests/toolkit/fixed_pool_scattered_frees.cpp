// Frees into any chunk of a grown FixedPool, for tests/toolkit/fixed_pool_chunks_instructions.sh,
// which counts their instructions under callgrind: `fixed_pool_scattered_frees CHUNKS N` grows a
// pool to CHUNKS chunks of 64 blocks, fills it, then N times deallocates a block of a chunk that
// a stride through the blocks picks (most times another than the one used last) and allocates it
// again.
#include <poolalloc/fixed_pool.hpp>

#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const long chunks = std::atol(argv[1]);
  const long pairs = std::atol(argv[2]);
  constexpr long kBlocksPerChunk = 64;
  poolalloc::FixedPool pool(64, kBlocksPerChunk);
  for (long i = 1; i < chunks; ++i) {
    if (!pool.grow(kBlocksPerChunk)) return 1;
  }
  const long blocks_in_all = chunks * kBlocksPerChunk;
  std::vector<void*> blocks;
  for (long i = 0; i < blocks_in_all; ++i) blocks.push_back(pool.allocate());
  long next = 0;
  for (long i = 0; i < pairs; ++i) {
    next = (next + 7919) % blocks_in_all;  // a prime stride: each chunk in turn, scattered
    pool.deallocate(blocks[next]);
    blocks[next] = pool.allocate();
  }
  return blocks[next] == nullptr;
}
