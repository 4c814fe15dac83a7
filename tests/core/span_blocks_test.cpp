// A span's blocks (span_blocks.hpp): the bump index, the bitmap of blocks given back, lowest
// first.
#include "span_blocks.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace poolalloc::internal {
namespace {

constexpr std::uint32_t kSpan = 128 * 1024;

struct SpanBlocksTest : testing::Test {
  std::vector<std::uint64_t> bitmap = std::vector<std::uint64_t>(SpanBlocks::kBitmapWords, 0);
};

TEST_F(SpanBlocksTest, NeverUsedBlocksAreTakenInOrderWithoutTouchingTheBitmap) {
  SpanBlocks blocks(16, kSpan);
  EXPECT_TRUE(blocks.empty());
  for (std::uint32_t i = 0; i < kSpan / 16; ++i) ASSERT_EQ(blocks.take(bitmap.data()), i);
  for (const std::uint64_t word : bitmap) EXPECT_EQ(word, 0u);
  EXPECT_TRUE(blocks.full());
  EXPECT_EQ(blocks.used_count(), kSpan / 16);
}

// Whatever order blocks come back in, they are taken again lowest first, before any never-used
// block: a program gets the blocks it allocates one after another in address order.
TEST_F(SpanBlocksTest, BlocksGivenBackInAnyOrderAreTakenAgainLowestFirst) {
  SpanBlocks blocks(64, kSpan);
  for (int i = 0; i < 1000; ++i) (void)blocks.take(bitmap.data());
  const std::uint32_t given[] = {999, 3, 640, 64, 65, 0, 511, 128};
  for (const std::uint32_t index : given) ASSERT_TRUE(blocks.give_back(index, bitmap.data()));
  EXPECT_EQ(blocks.given_back_count(), 8u);
  for (const std::uint32_t expected : {0u, 3u, 64u, 65u, 128u, 511u, 640u, 999u})
    EXPECT_EQ(blocks.take(bitmap.data()), expected);
  EXPECT_EQ(blocks.take(bitmap.data()), 1000u);  // then the bump index
}

TEST_F(SpanBlocksTest, ABlockGivenBackTwiceIsRefusedAndChangesNothing) {
  SpanBlocks blocks(32, kSpan);
  for (int i = 0; i < 10; ++i) (void)blocks.take(bitmap.data());
  ASSERT_TRUE(blocks.give_back(7, bitmap.data()));
  EXPECT_FALSE(blocks.give_back(7, bitmap.data()));
  EXPECT_EQ(blocks.given_back_count(), 1u);
  EXPECT_EQ(blocks.used_count(), 9u);
}

TEST_F(SpanBlocksTest, ASpanWhoseBlocksAllCameBackIsEmptyAndClearsItsBitmap) {
  SpanBlocks blocks(48, kSpan);
  const std::uint32_t count = blocks.block_count();
  for (std::uint32_t i = 0; i < count; ++i) (void)blocks.take(bitmap.data());
  for (std::uint32_t i = count; i-- > 0;) {
    EXPECT_FALSE(blocks.empty());
    ASSERT_TRUE(blocks.give_back(i, bitmap.data()));
  }
  EXPECT_TRUE(blocks.empty());
  blocks.clear_bitmap(bitmap.data());
  for (const std::uint64_t word : bitmap) EXPECT_EQ(word, 0u);
}

TEST_F(SpanBlocksTest, TheBlocksGivenBackAreVisitedLowestFirst) {
  SpanBlocks blocks(16, kSpan);
  for (int i = 0; i < 8192; ++i) (void)blocks.take(bitmap.data());
  for (const std::uint32_t index : {8191u, 4096u, 5u, 63u, 64u}) {
    ASSERT_TRUE(blocks.give_back(index, bitmap.data()));
  }
  std::vector<std::uint32_t> seen;
  blocks.for_each_given_back(bitmap.data(), [&](std::uint32_t index) { seen.push_back(index); });
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

}  // namespace
}  // namespace poolalloc::internal
