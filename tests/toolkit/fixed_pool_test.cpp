#include <poolalloc/fixed_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "address_text.hpp"
#include "reserved_address_space.hpp"

namespace {

using poolalloc::DebugChecks;
using poolalloc::FixedPool;
using poolalloc::Growth;

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

TEST(FixedPool, CreateRejectsZeroSizesAndBadAlignments) {
  FixedPool pool;
  EXPECT_FALSE(pool.create(0, 10));
  EXPECT_FALSE(pool.create(16, 0));
  EXPECT_FALSE(pool.create(16, 10, 0));
  EXPECT_FALSE(pool.create(16, 10, 3));
  EXPECT_FALSE(pool.create(16, 10, 48));
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(pool.allocate(), nullptr);
}

TEST(FixedPool, CreateRejectsSizesThatOverflow) {
  FixedPool pool;
  EXPECT_FALSE(pool.create(SIZE_MAX, 1));
  EXPECT_FALSE(pool.create(SIZE_MAX - 2, 1, 16));
  EXPECT_FALSE(pool.create(SIZE_MAX / 2, 4));
  EXPECT_FALSE(pool.create(16, SIZE_MAX));
  EXPECT_FALSE(pool.create(16, 4, std::size_t{1} << 63));
  EXPECT_FALSE(pool.create(std::size_t{1} << 20, std::size_t{1} << 13));  // 8 GiB in one chunk
  EXPECT_FALSE(pool.create(16, 4, std::size_t{1} << 63, Growth::fixed, DebugChecks::on));
  EXPECT_EQ(pool.capacity(), 0u);
}

TEST(FixedPool, MaxBlocksPerChunkIsTheMostThatCreateAccepts) {
  const std::size_t most = FixedPool::max_blocks_per_chunk(1024, 16, DebugChecks::off);
  EXPECT_EQ(most, UINT32_MAX / 1024);  // a chunk stays under 4 GiB
  EXPECT_LT(FixedPool::max_blocks_per_chunk(1024, 16, DebugChecks::on), most);  // guard bytes
  FixedPool pool;
  EXPECT_FALSE(pool.create(1024, most + 1, 16, Growth::fixed, DebugChecks::off));
  EXPECT_EQ(FixedPool::max_blocks_per_chunk(0, 16), 0u);
  EXPECT_EQ(FixedPool::max_blocks_per_chunk(16, 3), 0u);
}

TEST(FixedPool, CreateOverCallerMemoryRejectsBuffersWithoutRoomForABlock) {
  alignas(16) unsigned char buffer[64];
  FixedPool pool;
  EXPECT_FALSE(pool.create(nullptr, 1024, 16, 16));
  EXPECT_FALSE(pool.create(buffer, 8, 16, 16));
  EXPECT_FALSE(pool.create(buffer + 1, 16, 16, 16));  // aligning the start leaves 1 byte
  EXPECT_FALSE(pool.create(buffer, sizeof buffer, 16, 6));
  EXPECT_FALSE(pool.create(buffer, sizeof buffer, SIZE_MAX, 16));
  EXPECT_TRUE(pool.create(buffer, sizeof buffer, 16, 16));
  EXPECT_EQ(pool.capacity(), 4u);
}

TEST(FixedPool, HandsOutDistinctAlignedBlocksThenNullptr) {
  FixedPool pool(24, 10, 64);
  ASSERT_EQ(pool.capacity(), 10u);
  std::set<std::uintptr_t> seen;
  for (int i = 0; i < 10; ++i) {
    void* block = pool.allocate();
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(aligned(block, 64)) << block;
    std::memset(block, i, 24);
    EXPECT_TRUE(seen.insert(reinterpret_cast<std::uintptr_t>(block)).second);
  }
  EXPECT_EQ(pool.allocate(), nullptr);
  EXPECT_EQ(pool.allocate(), nullptr);
  for (auto it = seen.begin(); std::next(it) != seen.end(); ++it)
    EXPECT_GE(*std::next(it) - *it, 24u);
}

TEST(FixedPool, RoundsBlocksUnderFourBytesUpToFour) {
  FixedPool pool(1, 8, 1);
  EXPECT_EQ(pool.block_size(), 4u);
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(static_cast<unsigned char*>(pool.allocate()));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(blocks[i + 1] - blocks[i], 4);
  pool.deallocate(blocks[3]);  // its 4-byte link must not spill into its neighbours
  std::memset(blocks[2], 0x11, 4);
  std::memset(blocks[4], 0x22, 4);
  EXPECT_EQ(pool.allocate(), blocks[3]);
  EXPECT_EQ(blocks[2][3], 0x11);
  EXPECT_EQ(blocks[4][0], 0x22);
}

TEST(FixedPool, CountsUsedFreeAndPeak) {
  FixedPool pool(32, 4);
  void* a = pool.allocate();
  void* b = pool.allocate();
  void* c = pool.allocate();
  EXPECT_EQ(pool.used_count(), 3u);
  EXPECT_EQ(pool.free_count(), 1u);
  pool.deallocate(b);
  pool.deallocate(a);
  EXPECT_EQ(pool.used_count(), 1u);
  EXPECT_EQ(pool.free_count(), 3u);
  EXPECT_EQ(pool.peak_used(), 3u);
  EXPECT_EQ(pool.block_size(), 32u);
  pool.deallocate(c);
  pool.deallocate(nullptr);
  EXPECT_EQ(pool.used_count(), 0u);
}

// used_count(), free_count() and peak_used() of a pool whose calls move between its chunks.
using Counts = std::array<std::size_t, 3>;
Counts counts(const FixedPool& pool) {
  return {pool.used_count(), pool.free_count(), pool.peak_used()};
}

// Allocations and frees in one chunk, then another, and back, around grow() and shrink().
void expect_exact_counts_across_chunks(FixedPool& pool) {
  void* a = pool.allocate();
  void* b = pool.allocate();  // the first chunk (2 blocks) is full
  EXPECT_EQ(counts(pool), (Counts{2, 0, 2}));
  ASSERT_TRUE(pool.grow(3));
  EXPECT_EQ(counts(pool), (Counts{2, 3, 2}));
  void* c = pool.allocate();  // from the second chunk
  EXPECT_EQ(counts(pool), (Counts{3, 2, 3}));
  pool.deallocate(a);  // into the first
  EXPECT_EQ(counts(pool), (Counts{2, 3, 3}));
  void* d = pool.allocate();  // the first again
  EXPECT_EQ(counts(pool), (Counts{3, 2, 3}));
  void* e = pool.allocate();  // the first is full: the second
  EXPECT_EQ(counts(pool), (Counts{4, 1, 4}));
  pool.deallocate(d);  // the first
  pool.deallocate(b);
  EXPECT_EQ(counts(pool), (Counts{2, 3, 4}));
  pool.deallocate(c);  // the second
  EXPECT_EQ(counts(pool), (Counts{1, 4, 4}));
  pool.deallocate(e);
  EXPECT_EQ(counts(pool), (Counts{0, 5, 4}));
  EXPECT_GT(pool.shrink(), 0u);  // gives back the second, the current chunk
  EXPECT_EQ(counts(pool), (Counts{0, 2, 4}));
  std::vector<void*> first{pool.allocate(), pool.allocate()};
  ASSERT_TRUE(pool.grow(4));
  std::vector<void*> third{pool.allocate(), pool.allocate(), pool.allocate()};
  EXPECT_EQ(counts(pool), (Counts{5, 1, 5}));
  pool.deallocate(first[0]);  // the first
  EXPECT_EQ(counts(pool), (Counts{4, 2, 5}));
  first[0] = pool.allocate();
  EXPECT_EQ(counts(pool), (Counts{5, 1, 5}));
  third.push_back(pool.allocate());  // the last block, in the third chunk
  EXPECT_EQ(counts(pool), (Counts{6, 0, 6}));
  EXPECT_EQ(pool.allocate(), nullptr);
  EXPECT_EQ(counts(pool), (Counts{6, 0, 6}));
  for (void* block : third) pool.deallocate(block);
  EXPECT_EQ(counts(pool), (Counts{2, 4, 6}));
  pool.deallocate(first[1]);  // the first, while the third is empty
  EXPECT_GT(pool.shrink(), 0u);
  EXPECT_EQ(pool.chunk_count(), 1u);
  EXPECT_EQ(counts(pool), (Counts{1, 1, 6}));
  pool.deallocate(first[0]);
  EXPECT_EQ(counts(pool), (Counts{0, 2, 6}));
}

TEST(FixedPool, CountsExactlyWhileCallsMoveBetweenChunks) {
  FixedPool pool(16, 2);
  expect_exact_counts_across_chunks(pool);
}

TEST(FixedPool, ReusesFreedBlocksLastInFirstOut) {
  FixedPool pool(16, 4);
  void* a = pool.allocate();
  void* b = pool.allocate();
  pool.deallocate(a);
  pool.deallocate(b);
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.allocate(), a);
}

TEST(FixedPool, CreationTouchesNoCallerMemoryAndAllocationNoneBeyondTheLink) {
  alignas(16) unsigned char buffer[256];
  std::memset(buffer, 0xee, sizeof buffer);
  FixedPool pool;
  ASSERT_TRUE(pool.create(buffer, sizeof buffer, 16, 16));
  for (unsigned char byte : buffer) ASSERT_EQ(byte, 0xee);
  auto* block = static_cast<unsigned char*>(pool.allocate());
  EXPECT_EQ(block, buffer);
  for (unsigned char byte : buffer) ASSERT_EQ(byte, 0xee);
  pool.deallocate(block);
  for (std::size_t i = 4; i < sizeof buffer; ++i) ASSERT_EQ(buffer[i], 0xee) << i;
}

TEST(FixedPool, AlignsTheStartOfCallerMemory) {
  alignas(64) unsigned char buffer[64 * 5];
  FixedPool pool;
  ASSERT_TRUE(pool.create(buffer + 8, sizeof buffer - 8, 64, 64));
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.allocate(), buffer + 64);
  EXPECT_TRUE(pool.owns(buffer + 64));
  EXPECT_FALSE(pool.owns(buffer));
}

TEST(FixedPool, RecreatingReplacesThePool) {
  FixedPool pool(16, 4);
  ASSERT_NE(pool.allocate(), nullptr);
  ASSERT_TRUE(pool.create(64, 2));
  EXPECT_EQ(pool.capacity(), 2u);
  EXPECT_EQ(pool.used_count(), 0u);
  EXPECT_EQ(pool.block_size(), 64u);
  pool.destroy();
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(pool.allocate(), nullptr);
}

TEST(FixedPool, GrowAddsBlocksWithoutMovingLiveOnes) {
  FixedPool pool(sizeof(int), 4);
  std::vector<int*> live;
  for (int i = 0; i < 4; ++i) live.push_back(static_cast<int*>(pool.allocate()));
  for (int i = 0; i < 4; ++i) *live[i] = i;
  ASSERT_EQ(pool.allocate(), nullptr);
  ASSERT_TRUE(pool.grow(3));
  EXPECT_EQ(pool.capacity(), 7u);
  for (int i = 0; i < 3; ++i) {
    int* block = static_cast<int*>(pool.allocate());
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(std::count(live.begin(), live.end(), block), 0);
    *block = -1;
  }
  EXPECT_EQ(pool.allocate(), nullptr);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*live[i], i);
  EXPECT_FALSE(pool.grow(0));
}

TEST(FixedPool, GrowNeedsACreatedPool) {
  FixedPool pool;
  unsigned char buffer[64];
  EXPECT_FALSE(pool.grow(4));
  EXPECT_FALSE(pool.grow(buffer, sizeof buffer));
}

TEST(FixedPool, ServesFreedBlocksOfEarlierChunksAfterGrowing) {
  FixedPool pool(16, 2);
  void* first = pool.allocate();
  void* second = pool.allocate();
  ASSERT_TRUE(pool.grow(2));
  void* third = pool.allocate();
  pool.deallocate(first);
  pool.deallocate(third);
  pool.deallocate(second);
  std::set<void*> again{pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()};
  EXPECT_EQ(again.size(), 4u);
  EXPECT_TRUE(again.count(first) && again.count(second) && again.count(third));
  EXPECT_EQ(pool.allocate(), nullptr);
}

TEST(FixedPool, GrowableModeDoublesCapacityWhenFull) {
  FixedPool pool(16, 4, 16, Growth::growable);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.allocate());
  EXPECT_EQ(pool.capacity(), 8u);
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate());
  EXPECT_EQ(pool.capacity(), 16u);
  EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(), 9u);
  for (void* block : blocks) pool.deallocate(block);
  EXPECT_EQ(pool.used_count(), 0u);
}

TEST(FixedPool, GrowOverFollowingCallerMemoryExtendsInPlace) {
  alignas(16) unsigned char buffer[16 * 8 + 8];
  FixedPool pool;
  ASSERT_TRUE(pool.create(buffer, 16 * 4 + 8, 16, 16));  // 8 bytes left after 4 blocks
  ASSERT_EQ(pool.capacity(), 4u);
  for (int i = 0; i < 4; ++i) ASSERT_NE(pool.allocate(), nullptr);
  ASSERT_TRUE(pool.grow(buffer + 16 * 4 + 8, 16 * 4));
  EXPECT_EQ(pool.capacity(), 8u);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(pool.allocate(), buffer + 16 * i);
  EXPECT_EQ(pool.allocate(), nullptr);
}

TEST(FixedPool, GrowOverOtherCallerMemoryAddsAChunk) {
  alignas(16) unsigned char first[64];
  alignas(16) unsigned char second[64];
  FixedPool pool;
  ASSERT_TRUE(pool.create(first, sizeof first, 16, 16));
  EXPECT_FALSE(pool.grow(second, 8));
  ASSERT_TRUE(pool.grow(second, sizeof second));
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_TRUE(pool.owns(second + 16));
}

TEST(FixedPool, GrowRefusesMemoryThePoolAlreadyUses) {
  alignas(16) static std::byte memory[512];
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory, 128, 16, 16));
  ASSERT_TRUE(pool.grow(memory + 264, 120));  // blocks from 272: 8 bytes of alignment padding
  ASSERT_EQ(pool.capacity(), 8u + 7u);
  EXPECT_FALSE(pool.grow(memory + 32, 64));        // inside the first chunk
  EXPECT_FALSE(pool.grow(memory + 96, 64));        // across the first chunk's end
  EXPECT_FALSE(pool.grow(memory + 320, 32));       // inside the grown buffer
  EXPECT_FALSE(pool.grow(memory + 384 - 16, 64));  // across the grown buffer's end
  EXPECT_FALSE(pool.grow(memory + 192, 80));       // into the grown buffer's alignment padding
  EXPECT_FALSE(pool.grow(memory, 512));            // around both
  EXPECT_EQ(pool.capacity(), 15u);
  EXPECT_EQ(pool.chunk_count(), 2u);
  EXPECT_TRUE(pool.grow(memory + 128, 136));  // the gap between them, which touches both
  EXPECT_EQ(pool.capacity(), 15u + 8u);
  EXPECT_FALSE(pool.grow(memory + 200, 16));  // the gap, now the first chunk's
  pool.verify();
}

TEST(FixedPool, GrowRefusesTheMemoryOfBlocksItAllocated) {
  FixedPool pool(16, 4);
  void* first = pool.allocate();
  void* second = pool.allocate();
  EXPECT_FALSE(pool.grow(first, 64));   // the whole chunk
  EXPECT_FALSE(pool.grow(second, 64));  // across its end
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.chunk_count(), 1u);
}

// Memory that adds no block is the caller's still: nothing of it is kept for a later grow().
TEST(FixedPool, GrowRefusesMemoryThatAddsNoBlockAndKeepsNothingOfIt) {
  alignas(16) static std::byte memory[256];
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory, 64, 16, 16));
  EXPECT_FALSE(pool.grow(memory + 64, 8));  // where the chunk ends, but half a block
  EXPECT_FALSE(pool.grow(memory + 160, 8));
  EXPECT_EQ(pool.capacity(), 4u);
  ASSERT_TRUE(pool.grow(memory + 72, 56));  // where the refused 8 bytes end: not contiguous
  EXPECT_EQ(pool.chunk_count(), 2u);
  EXPECT_EQ(pool.capacity(), 4u + 3u);  // from memory + 80, the first aligned address
  EXPECT_FALSE(pool.owns(memory + 64));
  EXPECT_FALSE(pool.owns(memory + 72));
  EXPECT_TRUE(pool.owns(memory + 80));
  EXPECT_EQ(pool.shrink(), 56u);  // what the second grow() was given, and nothing more
}

// Less than a block that completes one with the bytes an earlier buffer left over is taken.
TEST(FixedPool, GrowTakesLessThanABlockThatCompletesOneWithTheLeftOver) {
  alignas(16) static std::byte memory[128];
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory, 64 + 8, 16, 16));
  ASSERT_TRUE(pool.grow(memory + 72, 8));
  EXPECT_EQ(pool.capacity(), 5u);
  EXPECT_EQ(pool.chunk_count(), 1u);
  EXPECT_TRUE(pool.owns(memory + 64));
}

// The bytes left over at the end of the chunk it follows count, and still make no block.
TEST(FixedPool, GrowRefusesMemoryThatAddsNoBlockEvenWithTheLeftOver) {
  alignas(16) static std::byte memory[128];
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory, 64 + 4, 16, 16));  // 4 bytes left over
  EXPECT_FALSE(pool.grow(memory + 68, 8));           // 12 bytes: no block
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.chunk_count(), 1u);
  EXPECT_FALSE(pool.owns(memory + 64));
}

// Over more caller memory than a chunk holds, create() takes as many blocks as a chunk holds;
// refusing would leave the pool nothing. The memory is reserved, never touched: creation touches
// no block.
TEST(FixedPool, OverCallerMemoryOfMoreThan4GiBTakesAsManyBlocksAsAChunkHolds) {
  const std::size_t bytes = std::size_t{5} << 30;
  const ReservedAddressSpace memory(bytes);
  ASSERT_NE(memory.start(), nullptr);
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory.start(), bytes, 16, 16));
  EXPECT_EQ(pool.capacity(), FixedPool::max_blocks_per_chunk(16, 16));
  EXPECT_EQ(pool.capacity(), UINT32_MAX / 16);
}

TEST(FixedPool, OwnsOnlyItsBlocks) {
  FixedPool pool(16, 4);
  void* block = pool.allocate();
  int local = 0;
  EXPECT_TRUE(pool.owns(block));
  EXPECT_FALSE(pool.owns(&local));
  EXPECT_FALSE(pool.owns(nullptr));
}

TEST(FixedPool, OwnsOnlyTheBytesOfBlocksNotThePaddingBetweenThem) {
  FixedPool pool(24, 4, 64);  // a stride of 64: 40 bytes of padding after each block
  auto* block = static_cast<std::byte*>(pool.allocate());
  EXPECT_TRUE(pool.owns(block + 23));
  EXPECT_FALSE(pool.owns(block + 24));
  EXPECT_FALSE(pool.owns(block + 63));
  EXPECT_TRUE(pool.owns(block + 64));  // the next block, never handed out
  EXPECT_TRUE(pool.owns(block + 3 * 64 + 23));
  EXPECT_FALSE(pool.owns(block + 3 * 64 + 24));
}

TEST(FixedPool, VerifyAcceptsAHealthyPool) {
  FixedPool pool(16, 8);
  void* a = pool.allocate();
  (void)pool.allocate();
  pool.deallocate(a);
  pool.verify();
  SUCCEED();
}

using FixedPoolDeathTest = ::testing::Test;

TEST_F(FixedPoolDeathTest, DeallocateOfAPointerOutsideThePoolAborts) {
  FixedPool pool(64, 4);
  int local = 0;
  EXPECT_DEATH(pool.deallocate(&local),
               "poolalloc: FixedPool 0x\\w+ \\(block 64 B\\): "
               "deallocate of 0x\\w+ outside the pool");
}

TEST_F(FixedPoolDeathTest, DeallocateOnAPoolNeverCreatedAborts) {
  FixedPool pool;
  int local = 0;
  EXPECT_DEATH(pool.deallocate(&local),
               "deallocate of " + death_test_hex(&local) + " outside the pool");
}

TEST_F(FixedPoolDeathTest, DeallocateOfAnInteriorPointerAborts) {
  FixedPool pool(48, 4, 16);
  auto* block = static_cast<char*>(pool.allocate());
  EXPECT_DEATH(pool.deallocate(block + 8), "FixedPool 0x\\w+ \\(block 48 B\\): deallocate of " +
                                               death_test_hex(block + 8) +
                                               " not on a block boundary");
}

TEST_F(FixedPoolDeathTest, DeallocateIntoAnEarlierChunkIsChecked) {
  FixedPool pool(16, 2, 16, Growth::growable);
  auto* first = static_cast<char*>(pool.allocate());
  (void)pool.allocate();
  (void)pool.allocate();  // the current chunk is now the second one
  EXPECT_DEATH(pool.deallocate(first + 4),
               "deallocate of " + death_test_hex(first + 4) + " not on a block");
}

TEST_F(FixedPoolDeathTest, VerifyReportsACorruptedFreeList) {
  FixedPool pool(16, 4);
  void* a = pool.allocate();
  (void)pool.allocate();
  pool.deallocate(a);
  const std::uint32_t never_handed_out = 3;
  std::memcpy(a, &never_handed_out, sizeof never_handed_out);  // a write after free
  EXPECT_DEATH(pool.verify(), "FixedPool 0x\\w+ \\(block 16 B\\): free list corrupted");
}

// Blocks freed in a random order over the many chunks of a grown pool (a pmr map's nodes) each go
// back to their own chunk, and the block freed last is still the next one handed out.
TEST(FixedPool, TheBlockFreedLastIsTheNextOneHandedOutAcrossChunks) {
  FixedPool pool(16, 4, 16, Growth::growable);
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(pool.chunk_count(), 9u);  // 4, 4, 8, ... 512
  const unsigned seed = 26;
  std::printf("seed %u\n", seed);
  std::mt19937 random(seed);
  std::shuffle(blocks.begin(), blocks.end(), random);
  for (void*& block : blocks) {
    void* freed = block;
    pool.deallocate(freed);
    block = pool.allocate();
    ASSERT_EQ(block, freed);
  }
  std::shuffle(blocks.begin(), blocks.end(), random);
  for (int i = 0; i < 500; ++i) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.allocate(), blocks[499]);  // the block freed last
  for (int i = 498; i >= 0; --i) {
    blocks[i] = pool.allocate();
    ASSERT_NE(blocks[i], nullptr);
  }
  EXPECT_EQ(pool.chunk_count(), 9u);  // the freed blocks served: no growth
  EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(), 1000u);  // each once
  EXPECT_EQ(pool.used_count(), 1000u);
  EXPECT_EQ(pool.free_count(), 24u);
  EXPECT_EQ(pool.peak_used(), 1000u);
  pool.verify();
}

// used_count(), free_count() and peak_used() stay exact while frees go to chunks other than the
// one that serves allocations.
TEST(FixedPool, CountsStayExactWhenBlocksAreFreedInARandomOrderAcrossChunks) {
  FixedPool pool(32, 8, 16, Growth::growable);
  std::vector<void*> blocks;
  for (int i = 0; i < 200; ++i) blocks.push_back(pool.allocate());
  const unsigned seed = 7;
  std::printf("seed %u\n", seed);
  std::mt19937 random(seed);
  std::shuffle(blocks.begin(), blocks.end(), random);
  for (std::size_t i = 0; i < 150; ++i) {
    pool.deallocate(blocks[i]);
    ASSERT_EQ(pool.used_count(), 199 - i);
    ASSERT_EQ(pool.free_count(), pool.capacity() - (199 - i));
    ASSERT_EQ(pool.peak_used(), 200u);
  }
  for (std::size_t i = 0; i < 100; ++i) blocks[i] = pool.allocate();
  EXPECT_EQ(pool.used_count(), 150u);
  for (std::size_t i = 0; i < 100; ++i) blocks.push_back(pool.allocate());
  EXPECT_EQ(pool.used_count(), 250u);
  EXPECT_EQ(pool.peak_used(), 250u);
  EXPECT_EQ(pool.capacity(), 256u);
  pool.verify();
}

TEST(FixedPool, ShrinkGivesBackTrailingChunksWithoutLiveBlocks) {
  FixedPool pool(64, 4, 16, Growth::growable);
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(pool.allocate());  // chunks of 4, 4, 8
  ASSERT_EQ(pool.chunk_count(), 3u);
  for (void* block : blocks) pool.deallocate(block);
  EXPECT_EQ(pool.shrink(), 12u * 64);
  EXPECT_EQ(pool.chunk_count(), 1u);
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_EQ(pool.shrink(), 0u);                                     // the first chunk stays
  for (int i = 0; i < 5; ++i) ASSERT_NE(pool.allocate(), nullptr);  // and grows again
  EXPECT_EQ(pool.capacity(), 8u);
}

TEST(FixedPool, ShrinkStopsAtTheLastChunkWithALiveBlock) {
  FixedPool pool(64, 4, 16, Growth::growable);
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(pool.allocate());
  for (int i = 0; i < 15; ++i) pool.deallocate(blocks[i]);  // the last chunk keeps one block
  EXPECT_EQ(pool.shrink(), 0u);
  EXPECT_EQ(pool.capacity(), 16u);
  pool.deallocate(blocks[15]);
  for (int i = 0; i < 6; ++i) blocks[i] = pool.allocate();  // from the chunk used last: the third
  EXPECT_EQ(pool.shrink(), 0u);
  for (int i = 0; i < 6; ++i) pool.deallocate(blocks[i]);
  EXPECT_EQ(pool.shrink(), 12u * 64);
}

TEST(FixedPool, ShrinkGivesBackCallerChunksWithoutFreeingThem) {
  alignas(16) static std::byte memory[256];
  std::byte* first = memory;
  std::byte* second = memory + 128;  // not adjacent: a chunk of its own
  FixedPool pool;
  ASSERT_TRUE(pool.create(first, 64, 16, 16));
  ASSERT_TRUE(pool.grow(second, 128));
  pool.deallocate(pool.allocate());
  EXPECT_EQ(pool.shrink(), 128u);
  EXPECT_EQ(pool.capacity(), 4u);
  EXPECT_FALSE(pool.owns(second));
}

// shrink() gives back what grow() took: the whole buffer, the bytes skipped to align it included.
TEST(FixedPool, ShrinkCountsTheAlignmentPaddingOfCallerMemory) {
  alignas(16) static std::byte memory[256];
  FixedPool pool;
  ASSERT_TRUE(pool.create(memory, 64, 16, 16));
  ASSERT_TRUE(pool.grow(memory + 136, 120));  // blocks from memory + 144
  ASSERT_EQ(pool.capacity(), 4u + 7u);
  EXPECT_EQ(pool.shrink(), 120u);
  EXPECT_EQ(pool.capacity(), 4u);
}

TEST(FixedPool, ReleaseGivesEverythingBackWithoutAReport) {
  FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
  (void)pool.allocate();
  testing::internal::CaptureStderr();
  pool.release();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(pool.used_count(), 0u);
}

TEST(FixedPool, PrintsItsStateInOneLine) {
  FixedPool pool(64, 4, 16, Growth::growable);
  pool.set_name("bullets");
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.allocate());
  pool.deallocate(blocks[0]);
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(),
            "FixedPool \"bullets\" (block 64 B): 4 used, 4 free of 8, peak 5, 2 chunks, "
            "debug checks off");
  for (int i = 1; i < 5; ++i) pool.deallocate(blocks[i]);
}

TEST(FixedPool, PrintsItsAddressWithoutAName) {
  FixedPool pool(16, 1);
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(), "FixedPool " + hex(&pool) +
                           " (block 16 B): 0 used, 1 free of 1, peak 0, 1 chunk, debug checks off");
}

TEST(FixedPool, KeepsOnlyTheFirst31CharactersOfAName) {
  FixedPool pool(16, 1);
  pool.set_name("a name much longer than thirty-one characters");
  EXPECT_EQ(pool.name(), "a name much longer than thirty-");
  pool.set_name(nullptr);
  EXPECT_EQ(pool.name(), "");
}

// Debug checks, switched on by the constructor flag (POOLALLOC_DEBUG makes it the default).

TEST(FixedPoolDebug, FillsFreshAndFreedBlocks) {
  FixedPool pool(64, 4, 16, Growth::fixed, DebugChecks::on);
  auto* block = static_cast<unsigned char*>(pool.allocate());
  for (int i = 0; i < 64; ++i) ASSERT_EQ(block[i], 0xA5) << i;
  pool.deallocate(block);
  for (int i = 4; i < 64; ++i) ASSERT_EQ(block[i], 0x5A) << i;
}

TEST(FixedPoolDebug, KeepsPayloadsAlignedBetweenGuards) {
  FixedPool pool(24, 8, 64, Growth::fixed, DebugChecks::on);
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(static_cast<unsigned char*>(pool.allocate()));
  for (unsigned char* block : blocks) {
    EXPECT_TRUE(aligned(block, 64));
    EXPECT_EQ(block[-1], 0xFD);
    EXPECT_EQ(block[24], 0xFD);
    std::memset(block, 0, 24);  // the whole payload is the caller's
  }
  pool.verify();
  for (unsigned char* block : blocks) pool.deallocate(block);
  pool.verify();
  EXPECT_EQ(pool.allocate(), blocks.back());
}

TEST(FixedPoolDebug, GuardsEachBlockWithAtLeast16BytesOf0xFDOnEachSide) {
  for (const std::size_t size : {1, 16, 24, 40, 64}) {
    FixedPool pool(size, 4, 16, Growth::fixed, DebugChecks::on);
    const auto* block = static_cast<const unsigned char*>(pool.allocate());
    for (int i = 1; i <= 16; ++i) ASSERT_EQ(block[-i], 0xFD) << size << " " << -i;
    for (std::size_t i = 0; i < 16; ++i) {
      ASSERT_EQ(block[pool.block_size() + i], 0xFD) << size << " " << i;
    }
    pool.deallocate(const_cast<unsigned char*>(block));
  }
}

TEST(FixedPoolDebug, FindsNoFaultInHeavyCorrectUse) {
  FixedPool pool(40, 64, 8, Growth::growable, DebugChecks::on);
  std::mt19937 random(7);
  std::vector<unsigned char*> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || random() % 3 != 0) {
      auto* block = static_cast<unsigned char*>(pool.allocate());
      ASSERT_NE(block, nullptr);
      std::memset(block, static_cast<int>(step), 40);
      live.push_back(block);
    } else {
      const std::size_t i = random() % live.size();
      pool.deallocate(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 1000 == 0) pool.verify();
  }
  for (unsigned char* block : live) pool.deallocate(block);
  pool.verify();
  EXPECT_EQ(pool.used_count(), 0u);
}

TEST(FixedPoolDebug, CountsExactlyWhileCallsMoveBetweenChunks) {
  FixedPool pool(16, 2, 16, Growth::fixed, DebugChecks::on);
  expect_exact_counts_across_chunks(pool);
}

TEST(FixedPoolDebug, ListsEveryLiveBlockOnDestroy) {
  FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
  void* a = pool.allocate();
  void* b = pool.allocate();
  pool.deallocate(pool.allocate());
  testing::internal::CaptureStderr();
  pool.destroy();
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("(block 32 B): leaked block " + hex(a) + "\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("(block 32 B): leaked block " + hex(b) + "\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("2 blocks still allocated at destroy()"), std::string::npos) << report;
}

TEST(FixedPoolDebug, TheDestructorListsEveryLiveBlock) {
  testing::internal::CaptureStderr();
  const void* leaked = nullptr;
  {
    FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
    pool.set_name("sparks");
    leaked = pool.allocate();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "poolalloc: FixedPool \"sparks\" (block 32 B): leaked block " + hex(leaked) +
                "\npoolalloc: FixedPool \"sparks\" (block 32 B): 1 blocks still allocated at "
                "destroy()\n");
}

TEST(FixedPoolDebug, ReportsNothingOnDestroyWhenAllBlocksCameBack) {
  FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
  pool.deallocate(pool.allocate());
  testing::internal::CaptureStderr();
  pool.destroy();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(FixedPoolDebug, DebugChecksKeepTheNumberOfBlocksACallerBufferHolds) {
  alignas(16) static std::byte buffer[4096];
  FixedPool checked;
  FixedPool unchecked;
  ASSERT_TRUE(checked.create(buffer, sizeof buffer, 32, 16, Growth::fixed, DebugChecks::on));
  ASSERT_TRUE(unchecked.create(buffer, sizeof buffer, 32, 16, Growth::fixed, DebugChecks::off));
  EXPECT_EQ(checked.capacity(), 128u);
  EXPECT_EQ(unchecked.capacity(), 128u);
  FixedPool owned_checked(32, 128, 16, Growth::fixed, DebugChecks::on);
  EXPECT_EQ(owned_checked.capacity(), 128u);
}

// A pool that allocates its own chunks with guard bytes, grown over caller memory: the buffer
// holds as many blocks as without debug checks, and they are checked all the same (fill
// patterns, double free).
TEST(FixedPoolDebug, GrowingOverCallerMemoryAddsAsManyBlocksAsWithoutDebugChecks) {
  alignas(16) static std::byte buffer[4096];
  FixedPool checked(32, 4, 16, Growth::fixed, DebugChecks::on);
  FixedPool unchecked(32, 4, 16, Growth::fixed, DebugChecks::off);
  ASSERT_TRUE(checked.grow(buffer, sizeof buffer));
  EXPECT_EQ(checked.capacity(), 4u + 128u);
  ASSERT_TRUE(unchecked.grow(buffer, sizeof buffer));
  EXPECT_EQ(unchecked.capacity(), checked.capacity());
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < checked.capacity(); ++i) blocks.push_back(checked.allocate());
  EXPECT_EQ(checked.allocate(), nullptr);
  for (void* block : blocks) {
    const auto* bytes = static_cast<const unsigned char*>(block);
    ASSERT_TRUE(std::all_of(bytes, bytes + 32, [](unsigned char b) { return b == 0xA5; }));
  }
  for (void* block : blocks) checked.deallocate(block);
  checked.verify();
}

TEST(FixedPoolDebug, OwnsNoGuardBytes) {
  FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
  auto* first = static_cast<std::byte*>(pool.allocate());
  auto* second = static_cast<std::byte*>(pool.allocate());
  EXPECT_TRUE(pool.owns(first));
  EXPECT_TRUE(pool.owns(first + 31));
  EXPECT_FALSE(pool.owns(first - 1));   // the first block's front guard
  EXPECT_FALSE(pool.owns(first + 32));  // its back guard
  EXPECT_FALSE(pool.owns(second - 1));  // the second block's front guard
  EXPECT_TRUE(pool.owns(second));
  pool.deallocate(second);
  pool.deallocate(first);
}

TEST(FixedPoolDebug, ReportsUseThePoolsName) {
  FixedPool pool(32, 4, 16, Growth::fixed, DebugChecks::on);
  pool.set_name("bullets");
  void* block = pool.allocate();
  testing::internal::CaptureStderr();
  pool.destroy();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "poolalloc: FixedPool \"bullets\" (block 32 B): leaked block " + hex(block) +
                "\npoolalloc: FixedPool \"bullets\" (block 32 B): 1 blocks still allocated at "
                "destroy()\n");
}

using FixedPoolDebugDeathTest = ::testing::Test;

TEST_F(FixedPoolDebugDeathTest, DoubleFreeAborts) {
  FixedPool pool(64, 4, 16, Growth::fixed, DebugChecks::on);
  void* block = pool.allocate();
  pool.deallocate(block);
  EXPECT_DEATH(pool.deallocate(block), "FixedPool 0x\\w+ \\(block 64 B\\): deallocate of " +
                                           death_test_hex(block) +
                                           ", which is already free \\(double free\\)");
}

TEST_F(FixedPoolDebugDeathTest, FreeOfABlockNeverHandedOutAborts) {
  FixedPool pool(64, 4, 16, Growth::fixed, DebugChecks::on);
  auto* a = static_cast<char*>(pool.allocate());
  auto* b = static_cast<char*>(pool.allocate());
  char* never = b + (b - a);
  EXPECT_DEATH(pool.deallocate(never),
               "deallocate of " + death_test_hex(never) + ", which was never allocated");
}

TEST_F(FixedPoolDebugDeathTest, OverwrittenGuardBeforeABlockAbortsOnDeallocate) {
  FixedPool pool(64, 4, 16, Growth::fixed, DebugChecks::on);
  auto* block = static_cast<char*>(pool.allocate());
  block[-1] = 0;
  EXPECT_DEATH(pool.deallocate(block),
               "guard bytes before block " + death_test_hex(block) + " overwritten");
}

TEST_F(FixedPoolDebugDeathTest, OverwrittenGuardAfterABlockAbortsOnDeallocate) {
  FixedPool pool(60, 4, 16, Growth::fixed, DebugChecks::on);
  auto* block = static_cast<char*>(pool.allocate());
  block[60] = 0;  // one past the end
  EXPECT_DEATH(pool.deallocate(block),
               "guard bytes after block " + death_test_hex(block) + " overwritten");
}

TEST_F(FixedPoolDebugDeathTest, VerifyFindsAnOverflowIntoALiveBlocksGuard) {
  FixedPool pool(16, 4, 16, Growth::fixed, DebugChecks::on);
  auto* block = static_cast<char*>(pool.allocate());
  (void)pool.allocate();
  block[17] = 0;
  EXPECT_DEATH(pool.verify(), "guard bytes after block " + death_test_hex(block) + " overwritten");
}

TEST_F(FixedPoolDebugDeathTest, WriteAfterFreeIsFoundByVerifyAndOnReuse) {
  FixedPool pool(16, 4, 16, Growth::fixed, DebugChecks::on);
  auto* block = static_cast<char*>(pool.allocate());
  pool.deallocate(block);
  block[8] = 1;
  EXPECT_DEATH(pool.verify(), "block " + death_test_hex(block) + " written after it was freed");
  EXPECT_DEATH((void)pool.allocate(),
               "block " + death_test_hex(block) + " written after it was freed");
}

TEST_F(FixedPoolDebugDeathTest, DoubleFreeInACallerChunkOfAnOwningPoolAborts) {
  alignas(16) static std::byte buffer[256];
  FixedPool pool(64, 1, 16, Growth::fixed, DebugChecks::on);
  ASSERT_TRUE(pool.grow(buffer, sizeof buffer));
  void* block = pool.allocate();  // the chunk added last serves first
  ASSERT_EQ(block, static_cast<void*>(buffer));
  pool.deallocate(block);
  EXPECT_DEATH(pool.deallocate(block), "deallocate of " + death_test_hex(block) +
                                           ", which is already free \\(double free\\)");
}

// As Pool<T>'s move: the blocks stay where they are, valid, and go back to the pool moved into;
// the pool moved from is as after release(), usable once created again.
TEST(FixedPoolMove, BlocksStayValidAndTheMovedFromPoolIsEmptyUntilCreatedAgain) {
  FixedPool pool(64, 4, 16, Growth::growable);
  pool.set_name("bullets");
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(pool.allocate());  // two chunks
  std::memset(blocks[5], 0x42, 64);
  FixedPool moved(std::move(pool));
  EXPECT_EQ(moved.capacity(), 8u);
  EXPECT_EQ(moved.used_count(), 6u);
  EXPECT_EQ(moved.peak_used(), 6u);
  EXPECT_EQ(moved.name(), "bullets");
  EXPECT_EQ(static_cast<unsigned char*>(blocks[5])[63], 0x42);
  for (void* block : blocks) EXPECT_TRUE(moved.owns(block));
  EXPECT_EQ(pool.capacity(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(pool.allocate(), nullptr);
  EXPECT_FALSE(pool.owns(blocks[0]));
  for (void* block : blocks) moved.deallocate(block);
  EXPECT_EQ(moved.used_count(), 0u);
  ASSERT_TRUE(pool.create(32, 2));
  EXPECT_NE(pool.allocate(), nullptr);
}

TEST(FixedPoolMove, MoveAssignmentGivesBackWhatThePoolHeldAndTakesTheOther) {
  FixedPool target(32, 8);
  (void)target.allocate();
  FixedPool source(64, 4);
  void* block = source.allocate();
  target = std::move(source);
  EXPECT_EQ(target.block_size(), 64u);
  EXPECT_EQ(target.capacity(), 4u);
  EXPECT_EQ(target.used_count(), 1u);
  EXPECT_TRUE(target.owns(block));
  target.deallocate(block);
  std::vector<FixedPool> pools;  // a vector of pools moves them as it grows
  for (int i = 0; i < 8; ++i) {
    pools.emplace_back(16, 4);
    (void)pools.back().allocate();
  }
  for (const FixedPool& p : pools) EXPECT_EQ(p.used_count(), 1u);
}

}  // namespace
