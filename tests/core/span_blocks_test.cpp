// A span's blocks (span_blocks.hpp): the bump index, the bitmap of blocks given back, lowest
// first.
#include "span_blocks.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace poolalloc::internal {
namespace {

constexpr std::uint32_t kSpan = 128 * 1024;

// The bitmap's head and tail apart, as the region lays them out (pool_region.hpp).
struct SpanBlocksTest : testing::Test {
  std::vector<std::uint64_t> head = std::vector<std::uint64_t>(SpanBitmap::kHeadWords, 0);
  std::vector<std::uint64_t> tail =
      std::vector<std::uint64_t>(SpanBlocks::kBitmapWords - SpanBitmap::kHeadWords, 0);
  SpanBitmap bitmap{head.data(), tail.data()};
};

TEST_F(SpanBlocksTest, NeverUsedBlocksAreTakenInOrderWithoutTouchingTheBitmap) {
  SpanBlocks blocks(16, kSpan);
  EXPECT_TRUE(blocks.empty());
  for (std::uint32_t i = 0; i < kSpan / 16; ++i) ASSERT_EQ(blocks.take(bitmap), i);
  for (const std::uint64_t word : head) EXPECT_EQ(word, 0u);
  for (const std::uint64_t word : tail) EXPECT_EQ(word, 0u);
  EXPECT_TRUE(blocks.full());
  EXPECT_EQ(blocks.used_count(), kSpan / 16);
}

// Whatever order blocks come back in, they are taken again lowest first, before any never-used
// block: a program gets the blocks it allocates one after another in address order.
TEST_F(SpanBlocksTest, BlocksGivenBackInAnyOrderAreTakenAgainLowestFirst) {
  SpanBlocks blocks(64, kSpan);
  for (int i = 0; i < 1000; ++i) (void)blocks.take(bitmap);
  const std::uint32_t given[] = {999, 3, 640, 64, 65, 0, 511, 128};
  for (const std::uint32_t index : given) ASSERT_TRUE(blocks.give_back(index, bitmap));
  EXPECT_EQ(blocks.given_back_count(), 8u);
  for (const std::uint32_t expected : {0u, 3u, 64u, 65u, 128u, 511u, 640u, 999u})
    EXPECT_EQ(blocks.take(bitmap), expected);
  EXPECT_EQ(blocks.take(bitmap), 1000u);  // then the bump index
}

TEST_F(SpanBlocksTest, ABlockGivenBackTwiceIsRefusedAndChangesNothing) {
  SpanBlocks blocks(32, kSpan);
  for (int i = 0; i < 10; ++i) (void)blocks.take(bitmap);
  ASSERT_TRUE(blocks.give_back(7, bitmap));
  EXPECT_FALSE(blocks.give_back(7, bitmap));
  EXPECT_EQ(blocks.given_back_count(), 1u);
  EXPECT_EQ(blocks.used_count(), 9u);
}

TEST_F(SpanBlocksTest, ASpanWhoseBlocksAllCameBackIsEmptyAndClearsItsBitmap) {
  SpanBlocks blocks(48, kSpan);
  const std::uint32_t count = blocks.block_count();
  for (std::uint32_t i = 0; i < count; ++i) (void)blocks.take(bitmap);
  for (std::uint32_t i = count; i-- > 0;) {
    EXPECT_FALSE(blocks.empty());
    ASSERT_TRUE(blocks.give_back(i, bitmap));
  }
  EXPECT_TRUE(blocks.empty());
  blocks.clear_bitmap(bitmap);
  for (const std::uint64_t word : head) EXPECT_EQ(word, 0u);
  for (const std::uint64_t word : tail) EXPECT_EQ(word, 0u);
}

// Blocks 0 to 1023 are bits of the head, the others of the tail: a span of blocks of 128 bytes
// or more (1,024 blocks at most) never reaches its tail.
TEST_F(SpanBlocksTest, TheFirst1024BlocksAreBitsOfTheHeadAndTheOthersOfTheTail) {
  SpanBlocks blocks(16, kSpan);
  for (int i = 0; i < 2048; ++i) (void)blocks.take(bitmap);
  ASSERT_TRUE(blocks.give_back(1023, bitmap));
  ASSERT_TRUE(blocks.give_back(1024, bitmap));
  EXPECT_EQ(head[SpanBitmap::kHeadWords - 1], std::uint64_t{1} << 63);
  EXPECT_EQ(tail[0], 1u);
  EXPECT_EQ(blocks.take(bitmap), 1023u);
  EXPECT_EQ(blocks.take(bitmap), 1024u);
  EXPECT_EQ(head[SpanBitmap::kHeadWords - 1], 0u);
  EXPECT_EQ(tail[0], 0u);
  EXPECT_EQ(SpanBlocks(128, kSpan).block_count(), SpanBitmap::kHeadWords * 64);
}

TEST_F(SpanBlocksTest, TheBlocksGivenBackAreVisitedLowestFirst) {
  SpanBlocks blocks(16, kSpan);
  for (int i = 0; i < 8192; ++i) (void)blocks.take(bitmap);
  for (const std::uint32_t index : {8191u, 4096u, 5u, 63u, 64u}) {
    ASSERT_TRUE(blocks.give_back(index, bitmap));
  }
  std::vector<std::uint32_t> seen;
  blocks.for_each_given_back(bitmap, [&](std::uint32_t index) { seen.push_back(index); });
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{5, 63, 64, 4096, 8191}));
}

TEST_F(SpanBlocksTest, OnlyBlockStartsInsideWholeBlocksAreBlockOffsets) {
  const SpanBlocks blocks(48, kSpan);
  EXPECT_TRUE(blocks.is_block_offset(96));
  EXPECT_FALSE(blocks.is_block_offset(100));
  EXPECT_EQ(blocks.index_of(96), 2u);
  EXPECT_TRUE(blocks.contains(48 * (kSpan / 48) - 1));
  EXPECT_FALSE(blocks.contains(48 * (kSpan / 48)));  // the tail past the last whole block
}

// Shared spans take runs: never-used ones from the bump index, or a run whose blocks all came
// back, found across the two words of the bitmap it straddles (11 blocks from 59: bits 59 to 63
// of word 0 and 0 to 5 of word 1), and taken out of the free ones whole.
TEST_F(SpanBlocksTest, ARunOfBlocksAllGivenBackIsTakenWholeAcrossTwoWordsOfTheBitmap) {
  SpanBlocks blocks(48, kSpan);
  EXPECT_EQ(blocks.take_never_used(11), 0u);
  EXPECT_EQ(blocks.take_never_used(11), 11u);
  for (std::uint32_t i = 22; i < 77; ++i) ASSERT_EQ(blocks.take(bitmap), i);
  for (std::uint32_t i = 59; i < 70; ++i) {
    if (i == 64) continue;
    ASSERT_TRUE(blocks.give_back(i, bitmap));
  }
  EXPECT_FALSE(SpanBlocks::all_given_back(bitmap, 59, 11)) << "block 64 is out";
  ASSERT_TRUE(blocks.give_back(64, bitmap));
  EXPECT_TRUE(SpanBlocks::all_given_back(bitmap, 59, 11));
  EXPECT_FALSE(SpanBlocks::all_given_back(bitmap, 58, 11));
  blocks.take_given_back(bitmap, 59, 11);
  EXPECT_EQ(blocks.given_back_count(), 0u);
  EXPECT_EQ(head[0], 0u);
  EXPECT_EQ(head[1], 0u);
  EXPECT_EQ(blocks.used_count(), 77u);
  EXPECT_TRUE(blocks.has_never_used(kSpan / 48 - 77));
  EXPECT_FALSE(blocks.has_never_used(kSpan / 48 - 76));
}

}  // namespace
}  // namespace poolalloc::internal
