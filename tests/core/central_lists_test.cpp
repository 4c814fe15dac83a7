// The central lists of each size class: a bounded stack of blocks given back (at most 16,384
// blocks and 4 MiB a class, 16 MiB over all classes), and behind it the class's spans, which
// serve what the stack cannot and take back what overflows it; a span whose blocks have all come
// back goes back to span carving.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "allocator.hpp"
#include "central_lists.hpp"
#include "free_block_marks.hpp"
#include "os.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "span_carving.hpp"
#include "thread_cache.hpp"

namespace {

using namespace poolalloc::internal;

constexpr std::uint32_t kStackBlocks = 16384;
constexpr std::size_t kStackBytes = std::size_t{4} << 20;

// The blocks of this thread's cache and of every class's stack go back into their spans: a class
// whose blocks no other thread holds then has no block out and no span.
void settle() {
  flush_thread_cache();
  empty_central_stacks();
}

::testing::AssertionResult idle(unsigned cls) {
  const ClassCounters counters = class_counters(cls);
  if (counters.blocks_out == 0 && counters.spans == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "class " << cls << " has " << counters.blocks_out
                                       << " blocks out of " << counters.spans << " spans";
}

std::byte* as_bytes(void* block) {
  return static_cast<std::byte*>(block);
}

// An idle class of 8192-byte blocks, 16 to a span, that each test takes blocks of and hands back.
class CentralLists : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kSize = 8192;
  static constexpr std::uint32_t kPerSpan = kSpanSize / kSize;

  void SetUp() override {
    settle();
    ASSERT_TRUE(idle(cls_));
  }
  void TearDown() override {
    empty_central_stacks();
    EXPECT_TRUE(idle(cls_)) << "the test left blocks out";
  }

  const unsigned cls_ = class_of(kSize);
};

// In address order as a thread cache hands them out, from the end of what it took.
TEST_F(CentralLists, AnIdleClassCarvesOneSpanAndHandsOutItsBlocksInAddressOrder) {
  const ClassCounters before = class_counters(cls_);
  const std::size_t carved = carved_bytes();
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  void* const lowest = blocks[kPerSpan - 1];
  EXPECT_EQ(region_offset(lowest) % kSpanSize, 0u);
  for (std::uint32_t i = 0; i < kPerSpan; ++i) {
    EXPECT_EQ(blocks[kPerSpan - 1 - i], as_bytes(lowest) + i * kSize) << i;
    EXPECT_TRUE(is_marked_free(blocks[i])) << i;
  }
  const ClassCounters after = class_counters(cls_);
  EXPECT_EQ(after.blocks_out, kPerSpan);
  EXPECT_EQ(after.spans, 1u);
  EXPECT_EQ(after.stacked, 0u);
  EXPECT_EQ(after.peak_out, std::max<std::uint64_t>(before.peak_out, kPerSpan));
  EXPECT_EQ(carved_bytes(), carved + kSpanSize);
  return_blocks_to_spans(cls_, blocks, kPerSpan);
}

TEST_F(CentralLists, TheCarvedEndFollowsTheBumpIndexButNotTheFreeBlocks) {
  void* blocks[5];
  ASSERT_EQ(take_blocks(cls_, blocks, 3), 3u);
  Span& span = span_of(blocks[0]);
  EXPECT_EQ(carved_end_of(span).load(), 3 * kSize);
  EXPECT_TRUE(decode_handed_out_block(blocks[0]).handed_out);  // the highest of the three
  EXPECT_FALSE(decode_handed_out_block(as_bytes(blocks[0]) + kSize).handed_out);
  ASSERT_EQ(take_blocks(cls_, blocks + 3, 2), 2u);
  EXPECT_EQ(carved_end_of(span).load(), 5 * kSize);
  void* const returned = blocks[1];
  return_blocks_to_spans(cls_, &blocks[1], 1);
  ASSERT_EQ(take_blocks(cls_, &blocks[1], 1), 1u);
  EXPECT_EQ(blocks[1], returned) << "the block given back comes before never-used ones";
  EXPECT_EQ(carved_end_of(span).load(), 5 * kSize);
  return_blocks_to_spans(cls_, blocks, 5);
}

// A take touches no more pages first than it is allowed (a thread cache's refill: one), and
// carves any number of blocks that came back: with 8 KiB blocks, each never-used one's mark
// falls in a page of its own.
TEST_F(CentralLists, ATakeTouchesAtMostThePagesItIsAllowedFirst) {
  void* first[8 + 2];  // a take fills up to `wanted` slots
  ASSERT_EQ(take_blocks(cls_, first, 8, 2), 2u);
  ASSERT_EQ(take_blocks(cls_, first + 2, 8, 2), 2u);
  return_blocks_to_spans(cls_, first, 3);
  void* again[8];
  EXPECT_EQ(take_blocks(cls_, again, 8, 2), 5u) << "the three that came back, two never used";
  return_blocks_to_spans(cls_, again, 5);
  return_blocks_to_spans(cls_, first + 3, 1);
}

// Never-used blocks of a span that is carved again with its pages (retained) fault in nothing:
// a take has them all, whatever its limit (sweeps of 16 KiB blocks, which empty and carve again
// a span every 8 blocks, took the slow path at every malloc without this).
TEST_F(CentralLists, NeverUsedBlocksOfASpanCarvedAgainWithItsPagesAreNotLimited) {
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  return_blocks_to_spans(cls_, blocks, kPerSpan);  // the span empties and is retained
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan, 1), kPerSpan);
  return_blocks_to_spans(cls_, blocks, kPerSpan);
}

TEST_F(CentralLists, ASpanGoesBackToSpanCarvingWhenItsLastBlockReturns) {
  const std::size_t carved = carved_bytes();
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  const void* const first = blocks[0];
  return_blocks_to_spans(cls_, blocks, kPerSpan - 1);
  EXPECT_EQ(class_counters(cls_).blocks_out, 1u);
  EXPECT_EQ(class_counters(cls_).spans, 1u);
  EXPECT_EQ(carved_bytes(), carved + kSpanSize);
  EXPECT_EQ(span_class_of(first), cls_);
  return_blocks_to_spans(cls_, &blocks[kPerSpan - 1], 1);
  EXPECT_EQ(class_counters(cls_).blocks_out, 0u);
  EXPECT_EQ(class_counters(cls_).spans, 0u);
  EXPECT_EQ(carved_bytes(), carved);
  EXPECT_EQ(span_class_of(first), kClassCount);
}

TEST_F(CentralLists, AFullSpanServesAgainOnceABlockReturns) {
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  const std::size_t carved = carved_bytes();
  return_blocks_to_spans(cls_, &blocks[7], 1);
  void* again = nullptr;
  ASSERT_EQ(take_blocks(cls_, &again, 1), 1u);
  EXPECT_EQ(again, blocks[7]);
  EXPECT_EQ(class_counters(cls_).spans, 1u);
  EXPECT_EQ(carved_bytes(), carved);
  return_blocks_to_spans(cls_, blocks, kPerSpan);
}

TEST_F(CentralLists, GivenBlocksWaitInTheStackUntilItIsEmptied) {
  const std::size_t carved = carved_bytes();
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  give_blocks(cls_, blocks, kPerSpan);
  ClassCounters counters = class_counters(cls_);
  EXPECT_EQ(counters.stacked, kPerSpan);
  EXPECT_EQ(counters.blocks_out, kPerSpan);
  EXPECT_EQ(counters.spans, 1u);
  EXPECT_EQ(carved_bytes(), carved + kSpanSize);
  empty_central_stacks();
  counters = class_counters(cls_);
  EXPECT_EQ(counters.stacked, 0u);
  EXPECT_EQ(counters.blocks_out, 0u);
  EXPECT_EQ(counters.spans, 0u);
  EXPECT_EQ(carved_bytes(), carved);
}

TEST_F(CentralLists, TakeHandsOutTheBlocksGivenBackLastFirst) {
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  give_blocks(cls_, blocks, 8);
  give_blocks(cls_, blocks + 8, 8);
  void* taken[3];
  ASSERT_EQ(take_blocks(cls_, taken, 1), 1u);
  EXPECT_EQ(taken[0], blocks[15]);
  ASSERT_EQ(take_blocks(cls_, taken, 3), 3u);
  EXPECT_EQ(taken[0], blocks[12]);
  EXPECT_EQ(taken[1], blocks[13]);
  EXPECT_EQ(taken[2], blocks[14]);
  EXPECT_EQ(class_counters(cls_).stacked, 12u);
  return_blocks_to_spans(cls_, &blocks[12], 4);
}

TEST_F(CentralLists, TakeEmptiesTheStackBeforeItCarves) {
  void* blocks[kPerSpan + 2];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  give_blocks(cls_, blocks, 3);
  const std::uint64_t out = class_counters(cls_).blocks_out;
  void* taken[5];
  ASSERT_EQ(take_blocks(cls_, taken, 5), 5u);
  EXPECT_TRUE(std::equal(taken, taken + 3, blocks));
  const ClassCounters counters = class_counters(cls_);
  EXPECT_EQ(counters.stacked, 0u);
  EXPECT_EQ(counters.blocks_out, out + 2);
  EXPECT_EQ(counters.spans, 2u);
  EXPECT_NE(span_index_of(taken[3]), span_index_of(blocks[0]));
  std::copy(taken + 3, taken + 5, blocks + kPerSpan);
  return_blocks_to_spans(cls_, blocks, kPerSpan + 2);
}

TEST(CentralListsBounds, EachClassStacksAtMost16384BlocksOr4MiBAndTheRestGoesIntoSpans) {
  settle();
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const std::uint32_t capacity =
        std::min(kStackBlocks, static_cast<std::uint32_t>(kStackBytes / class_size(cls)));
    const std::uint32_t overflow = 3;
    std::vector<void*> blocks(capacity + overflow);
    ASSERT_EQ(take_blocks(cls, blocks.data(), capacity + overflow), capacity + overflow);
    const std::uint64_t out = class_counters(cls).blocks_out;
    give_blocks(cls, blocks.data(), capacity + overflow);
    const ClassCounters counters = class_counters(cls);
    EXPECT_EQ(counters.stacked, capacity) << "class " << cls;
    EXPECT_EQ(counters.blocks_out, out - overflow) << "class " << cls;
    empty_central_stacks();
  }
}

// Three classes stack 4 MiB each, a fourth 3.5 MiB: 512 KiB are left for the others.
TEST(CentralListsBounds, AllStacksTogetherHoldAtMost16MiB) {
  settle();
  const auto fill = [](std::size_t size, std::uint32_t count) {
    const unsigned cls = class_of(size);
    std::vector<void*> blocks(count);
    EXPECT_EQ(take_blocks(cls, blocks.data(), count), count);
    give_blocks(cls, blocks.data(), count);
    return class_counters(cls).stacked;
  };
  EXPECT_EQ(fill(1024, 4096), 4096u);
  EXPECT_EQ(fill(2048, 2048), 2048u);
  EXPECT_EQ(fill(4096, 1024), 1024u);
  EXPECT_EQ(fill(8192, 448), 448u);
  EXPECT_EQ(fill(16384, 40), 32u);
  EXPECT_EQ(fill(32768, 5), 0u);
  empty_central_stacks();
}

// 32 KiB blocks, 4 to a span, 128 to a stack: of 132 blocks given back, the last 4 (the last
// span's) go into their span, which empties and goes back to span carving.
TEST(CentralListsBounds, OverflowPastTheStackGoesIntoSpansAndReleasesThoseThatEmpty) {
  settle();
  const unsigned cls = class_of(32768);
  ASSERT_TRUE(idle(cls));
  constexpr std::uint32_t kPerSpan = kSpanSize / 32768;
  constexpr std::uint32_t kCount = 128 + kPerSpan;
  const std::size_t carved = carved_bytes();
  std::vector<void*> blocks(kCount);
  ASSERT_EQ(take_blocks(cls, blocks.data(), kCount), kCount);
  EXPECT_EQ(class_counters(cls).spans, kCount / kPerSpan);
  give_blocks(cls, blocks.data(), kCount);
  const ClassCounters counters = class_counters(cls);
  EXPECT_EQ(counters.stacked, 128u);
  EXPECT_EQ(counters.blocks_out, 128u);
  EXPECT_EQ(counters.spans, kCount / kPerSpan - 1);
  EXPECT_EQ(carved_bytes(), carved + (kCount / kPerSpan - 1) * kSpanSize);
  empty_central_stacks();
  EXPECT_TRUE(idle(cls));
}

// Blocks of 32 KiB, 8 pages each: a free block in a span that is still in use keeps only the
// page of its link and mark.
TEST(CentralListsPurge, AFreeBlockOfASpanInUseKeepsOnlyThePageOfItsHeader) {
  settle();
  const unsigned cls = class_of(32768);
  ASSERT_TRUE(idle(cls));
  void* blocks[4];
  ASSERT_EQ(take_blocks(cls, blocks, 4), 4u);
  for (void* block : blocks) {
    std::memset(block, 0x5a, 32768);
    set_mark(block);
  }
  return_blocks_to_spans(cls, &blocks[1], 1);
  return_blocks_to_spans(cls, &blocks[3], 1);
  purge_free_blocks();
  EXPECT_EQ(os_resident_bytes(blocks[0], 32768), 32768u);
  EXPECT_EQ(os_resident_bytes(blocks[1], 32768), kPageSize);
  EXPECT_EQ(os_resident_bytes(blocks[2], 32768), 32768u);
  EXPECT_EQ(os_resident_bytes(blocks[3], 32768), kPageSize);
  EXPECT_TRUE(is_marked_free(blocks[1]));
  EXPECT_TRUE(is_marked_free(blocks[3]));
  return_blocks_to_spans(cls, &blocks[0], 1);
  return_blocks_to_spans(cls, &blocks[2], 1);
  EXPECT_TRUE(idle(cls));
}

using CentralListsDeathTest = CentralLists;

// Nothing is read from a block back in its span: whatever a program writes into it (a forged
// index, the key's own in-span mark, zeros), the takes hand out the span's free blocks lowest
// first, each once, and no live block.
TEST_F(CentralLists, WritesIntoBlocksBackInTheirSpanRedirectNoTake) {
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  return_blocks_to_spans(cls_, &blocks[9], 1);
  return_blocks_to_spans(cls_, &blocks[5], 1);
  return_blocks_to_spans(cls_, &blocks[3], 1);
  const std::uint32_t live_index = 7;
  std::memcpy(blocks[9], &live_index, sizeof live_index);
  std::memset(blocks[5], 0, 16);
  words_of(blocks[3])[0] = reinterpret_cast<std::uintptr_t>(blocks[7]);
  void* taken[3] = {};
  ASSERT_EQ(take_blocks(cls_, taken, 3), 3u);
  // The lowest address last: a thread cache hands out from the end.
  std::vector<void*> expected = {blocks[3], blocks[5], blocks[9]};
  std::sort(expected.begin(), expected.end(), std::greater<>());
  EXPECT_EQ(std::vector<void*>(taken, taken + 3), expected);
  return_blocks_to_spans(cls_, blocks, kPerSpan);
}

// A block that reaches its span while it waits there already (freed twice, its in-span mark
// written over in between, so that free's check could not see it) is reported, not counted twice.
TEST_F(CentralListsDeathTest, ABlockGivenBackToItsSpanTwiceIsReportedAsADoubleFree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  return_blocks_to_spans(cls_, &blocks[6], 1);
  EXPECT_DEATH(
      {
        clear_mark(blocks[6]);
        return_blocks_to_spans(cls_, &blocks[6], 1);
      },
      "double free of the 8192-byte block");
  for (int i = 0; i < static_cast<int>(kPerSpan); ++i)
    if (i != 6) return_blocks_to_spans(cls_, &blocks[i], 1);
}

// malloc_trim's purge takes the free blocks of partly used spans (blocks above a page) from the
// spans' bitmaps: what a program wrote into a freed block cannot lead it to the pages of a live
// block.
TEST(CentralListsPurge, WritesIntoFreedBlocksLeadThePurgeToNoLiveBlock) {
  settle();
  const unsigned cls = class_of(32768);
  ASSERT_TRUE(idle(cls));
  void* blocks[4];
  ASSERT_EQ(take_blocks(cls, blocks, 4), 4u);
  for (void* block : blocks) std::memset(block, 0x5a, 32768);
  return_blocks_to_spans(cls, &blocks[1], 1);
  return_blocks_to_spans(cls, &blocks[2], 1);
  words_of(blocks[2])[0] = 0;  // an index naming block 0, as a span's link once did
  purge_free_blocks();
  for (void* live : {blocks[0], blocks[3]}) {
    const auto* bytes = static_cast<const unsigned char*>(live);
    EXPECT_EQ(bytes[0], 0x5a);
    EXPECT_EQ(bytes[32767], 0x5a);
  }
  return_blocks_to_spans(cls, &blocks[0], 1);
  return_blocks_to_spans(cls, &blocks[3], 1);
  EXPECT_TRUE(idle(cls));
}

// Blocks given back while fork() holds the class's lock wait in the orphan list, marked
// orphaned. A link forged with the key to a block that waits elsewhere (here, one taken out of
// its span, as in a thread cache) is reported: filing that block into its span would hand it out
// a second time.
TEST_F(CentralListsDeathTest, AnOrphanLinkToABlockThatIsNoOrphanIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* blocks[kPerSpan];
  ASSERT_EQ(take_blocks(cls_, blocks, kPerSpan), kPerSpan);
  EXPECT_DEATH(
      {
        lock_central_lists_for_fork();
        give_blocks(cls_, &blocks[2], 1);  // the lock is held: the block is orphaned
        unlock_central_lists_after_fork(false);
        words_of(blocks[2])[0] =
            reinterpret_cast<std::uintptr_t>(blocks[4]) ^ mark_of(blocks[2], Waits::kOrphaned);
        void* block = nullptr;
        (void)take_blocks(cls_, &block, 1);
      },
      "the free list of size class .+ \\(8192-byte blocks\\) is corrupted: it leads to "
      "0x.+, which is not a free block");
  return_blocks_to_spans(cls_, blocks, kPerSpan);
}

}  // namespace
