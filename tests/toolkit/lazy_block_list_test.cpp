#include <poolalloc/detail/lazy_block_list.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace {

using poolalloc::detail::BlockDivider;
using poolalloc::detail::LazyBlockList;

TEST(BlockDivider, MatchesDivisionForEveryClassLikeDivisor) {
  for (std::uint32_t d : {4u, 16u, 48u, 80u, 112u, 640u, 1792u, 28672u, 65536u}) {
    const BlockDivider div(d);
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, 7 * d, 7 * d + 3, 262143u, UINT32_MAX}) {
      EXPECT_EQ(div.quotient(n), n / d) << n << " / " << d;
      EXPECT_EQ(div.divides(n), n % d == 0) << n << " % " << d;
    }
  }
}

// Every distance from the run's start, near it and 2^32 bytes (a 32-bit offset's wrap) away.
TEST(LazyBlockList, HoldsABlockOnlyWhereOneOfItsBlocksStarts) {
  for (std::uint32_t size : {4u, 12u, 16u, 24u, 56u, 64u, 80u, 1792u}) {
    std::vector<std::byte> memory(std::size_t{size} * 5);
    const LazyBlockList list(memory.data(), size, 5);
    const auto base = reinterpret_cast<std::uintptr_t>(memory.data());
    for (std::uint64_t wrap : {0ull, 1ull << 32, 0ull - (1ull << 32)}) {
      for (std::int64_t distance = -2 * std::int64_t{size}; distance < 7 * std::int64_t{size};
           ++distance) {
        const auto p =
            reinterpret_cast<const void*>(base + wrap + static_cast<std::uint64_t>(distance));
        const bool starts_a_block =
            wrap == 0 && distance >= 0 && distance < 5 * std::int64_t{size} && distance % size == 0;
        ASSERT_EQ(list.holds_block(p), starts_a_block)
            << "size " << size << ", distance " << distance << ", wrap " << wrap;
      }
    }
  }
  EXPECT_FALSE(LazyBlockList().holds_block(nullptr));
}

// The quotient is built from two 32-bit products; its error would show first where the products
// are largest: numerators at the top of the 32-bit range, around the multiples of each divisor.
TEST(BlockDivider, MatchesDivisionForEveryDivisorUpTo65536NearEveryPowerOfTwoMultiple) {
  for (std::uint32_t d = 4; d <= 65536; ++d) {
    const BlockDivider div(d);
    const std::uint32_t last_multiple = UINT32_MAX - UINT32_MAX % d;
    for (std::uint32_t k = 1; k <= UINT32_MAX / d; k *= 2) {
      for (std::uint32_t m : {k * d, last_multiple - (k - 1) * d}) {
        for (std::uint32_t n : {m - 1, m, m + 1}) {
          ASSERT_EQ(div.quotient(n), n / d) << n << " / " << d;
          ASSERT_EQ(div.divides(n), n % d == 0) << n << " % " << d;
        }
      }
    }
  }
}

TEST(LazyBlockList, HandsOutEveryBlockOnceThenNullptr) {
  std::vector<std::uint32_t> memory(8 * 4);
  LazyBlockList list(memory.data(), 16, 8);
  std::set<void*> seen;
  for (int i = 0; i < 8; ++i) {
    void* block = list.allocate();
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(list.holds_block(block));
    EXPECT_TRUE(seen.insert(block).second);
  }
  EXPECT_EQ(list.allocate(), nullptr);
  EXPECT_TRUE(list.full());
}

TEST(LazyBlockList, ReusesReturnedBlocksLastInFirstOut) {
  std::vector<std::uint32_t> memory(4 * 4);
  LazyBlockList list(memory.data(), 16, 4);
  void* a = list.allocate();
  void* b = list.allocate();
  list.deallocate(a);
  list.deallocate(b);
  EXPECT_TRUE(list.free_list_is_consistent());
  EXPECT_EQ(list.allocate(), b);
  EXPECT_EQ(list.allocate(), a);
  EXPECT_EQ(list.free_count(), 2u);
}

TEST(LazyBlockList, ReusesReturnedBlocksLastInFirstOutAcrossItsLists) {
  constexpr int kBlocks = 3 * LazyBlockList::kLists + 1;  // odd
  std::vector<std::uint32_t> memory(kBlocks * 4);
  LazyBlockList list(memory.data(), 16, kBlocks);
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(list.allocate());
  for (int i = 0; i < kBlocks; i += 2) list.deallocate(blocks[i]);  // the even ones, then the odd
  for (int i = 1; i < kBlocks; i += 2) list.deallocate(blocks[i]);
  EXPECT_TRUE(list.free_list_is_consistent());
  for (int i = kBlocks - 2; i >= 0; i -= 2) ASSERT_EQ(list.allocate(), blocks[i]);
  for (int i = kBlocks - 1; i >= 0; i -= 2) ASSERT_EQ(list.allocate(), blocks[i]);
  EXPECT_EQ(list.allocate(), nullptr);
}

// An allocation loads the link of the block it takes, and the next allocations do not wait for
// that load: the block freed before the one it takes heads another list.
TEST(LazyBlockList, LinksAFreedBlockToTheOneFreedKListsFreesBefore) {
  constexpr std::uint32_t kBlocks = 2 * LazyBlockList::kLists + 1;
  std::vector<std::uint32_t> memory(kBlocks * 4);
  LazyBlockList list(memory.data(), 16, kBlocks);
  std::vector<void*> blocks;
  for (std::uint32_t i = 0; i < kBlocks; ++i) blocks.push_back(list.allocate());
  for (void* block : blocks) list.deallocate(block);
  for (std::uint32_t i = LazyBlockList::kLists; i < kBlocks; ++i) {
    std::uint32_t link = 0;
    std::memcpy(&link, blocks[i], sizeof link);
    EXPECT_EQ(link, (i - LazyBlockList::kLists) * 16) << i;
  }
  EXPECT_TRUE(list.free_list_is_consistent());
}

TEST(LazyBlockList, DetectsAListThatEndsEarly) {
  constexpr std::uint32_t kBlocks = 2 * LazyBlockList::kLists;
  std::vector<std::uint32_t> memory(kBlocks * 4);
  LazyBlockList list(memory.data(), 16, kBlocks);
  std::vector<void*> blocks;
  for (std::uint32_t i = 0; i < kBlocks; ++i) blocks.push_back(list.allocate());
  for (void* block : blocks) list.deallocate(block);
  ASSERT_TRUE(list.free_list_is_consistent());
  const std::uint32_t end = LazyBlockList::kNoBlock;
  std::memcpy(blocks[kBlocks - 1], &end, sizeof end);  // its list loses the block below it
  EXPECT_FALSE(list.free_list_is_consistent());
}

TEST(LazyBlockList, CreationTouchesNoBlock) {
  std::vector<unsigned char> memory(64, 0xee);
  LazyBlockList list(memory.data(), 16, 4);
  for (unsigned char byte : memory) ASSERT_EQ(byte, 0xee);
  EXPECT_EQ(list.free_count(), 4u);
}

TEST(LazyBlockList, DetectsCorruptedLink) {
  std::vector<std::uint32_t> memory(4 * 4);
  LazyBlockList list(memory.data(), 16, 4);
  void* a = list.allocate();
  list.deallocate(a);
  static_cast<std::uint32_t*>(a)[0] = 3 * 16;  // a link to a block never handed out
  EXPECT_FALSE(list.free_list_is_consistent());
}

TEST(LazyBlockList, DetectsLinkIntoTheMiddleOfABlock) {
  std::vector<std::uint32_t> memory(4 * 4);
  LazyBlockList list(memory.data(), 16, 4);
  void* a = list.allocate();
  ASSERT_NE(list.allocate(), nullptr);  // the block at offset 16
  list.deallocate(a);
  static_cast<std::uint32_t*>(a)[0] = 16 + 8;  // inside that block
  EXPECT_FALSE(list.free_list_is_consistent());
}

TEST(LazyBlockList, RejectsInteriorPointers) {
  std::vector<std::uint32_t> memory(4 * 12);
  LazyBlockList list(memory.data(), 48, 4);
  auto* base = reinterpret_cast<std::byte*>(memory.data());
  EXPECT_TRUE(list.contains(base + 100));
  EXPECT_FALSE(list.holds_block(base + 100));
  EXPECT_TRUE(list.holds_block(base + 96));
  EXPECT_FALSE(list.contains(base + 192));
}

}  // namespace
