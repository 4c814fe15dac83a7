// Shared spans (shared_spans.hpp): a tag's bins of the classes it uses little take their blocks
// by runs from spans of the class that other tags' such bins share; free still finds each
// block's tag, from any thread.
#include "shared_spans.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "allocator.hpp"
#include "central_lists.hpp"
#include "stats.hpp"
#include "tag_registry.hpp"
#include "tag_test_helpers.hpp"
#include "thread_cache.hpp"

namespace {

using namespace poolalloc::internal;
using core_test::on_a_new_thread;
using core_test::tag_named;

// `count` blocks of `size` bytes allocated under `tag` on this thread.
std::vector<void*> allocate_under(unsigned tag, std::size_t size, int count) {
  EXPECT_EQ(push_tag(static_cast<int>(tag)), 0);
  std::vector<void*> blocks;
  for (int i = 0; i < count; ++i) blocks.push_back(allocate(size));
  EXPECT_EQ(pop_tag(), static_cast<int>(tag));
  return blocks;
}

// The first tag to ask for blocks of a class while it is the only one registered takes spans of
// its own; the tests of what other tags' bins do let a tag of their own be the first, with a
// block of `size` bytes, before they register theirs.
void claim_class(std::size_t size) {
  const unsigned first = tag_named("SharedClaim");
  on_a_new_thread([&] { deallocate(allocate_under(first, size, 1)[0]); });
}

std::uint64_t live_blocks_of(unsigned tag) {
  poolalloc_tag_stats stats{};
  EXPECT_TRUE(collect_tag_stats(static_cast<int>(tag), stats));
  return stats.live_blocks;
}

// Two tags' first blocks of a class come from one span, in runs of their own: the span is
// shared, its record's bin is the class's (untagged), which counts it in its statistics, and each
// block's bin is its own tag's.
TEST(SharedSpans, TwoTagsFirstBlocksOfAClassShareASpanInRunsOfTheirOwn) {
  claim_class(64);
  const unsigned first = tag_named("SharedFirst");
  const unsigned second = tag_named("SharedSecond");
  on_a_new_thread([&] {
    const std::vector<void*> a = allocate_under(first, 64, 3);
    const std::vector<void*> b = allocate_under(second, 64, 3);
    EXPECT_EQ(span_index_of(a[0]), span_index_of(b[0]));
    const Span& span = span_of(a[0]);
    EXPECT_NE(span.shared_slot, 0);
    EXPECT_EQ(span_bin_of(a[0]), class_of(64));
    EXPECT_EQ(class_counters(class_of(64)).spans, 1u) << "the class's statistics count it";
    const std::uint32_t run = run_blocks(64);
    EXPECT_EQ(run, 8u);  // 512 bytes
    for (void* p : a) {
      EXPECT_EQ(bin_of_block(p), bin_of(first, class_of(64)));
      EXPECT_EQ(block_index_of(span, p) / run, block_index_of(span, a[0]) / run);
    }
    for (void* p : b) {
      EXPECT_EQ(bin_of_block(p), bin_of(second, class_of(64)));
      EXPECT_NE(block_index_of(span, p) / run, block_index_of(span, a[0]) / run);
    }
    EXPECT_EQ(live_blocks_of(first), 3u);
    EXPECT_EQ(live_blocks_of(second), 3u);
    for (void* p : a) deallocate(p);
    for (void* p : b) deallocate(p);
    EXPECT_EQ(live_blocks_of(first), 0u);
    EXPECT_EQ(live_blocks_of(second), 0u);
  });
}

// While one tag is registered, the first tag to ask for blocks of a class takes spans of its own
// from the start, however few it takes: a program that pushes one tag allocates as an untagged one
// does. A tag registered after it takes its first blocks of the class from a shared span.
TEST(SharedSpans, WhileOneTagIsRegisteredTheFirstToAskForBlocksOfAClassTakesSpansOfItsOwn) {
  const unsigned first = tag_named("SharedAlone");
  on_a_new_thread([&] {
    const std::vector<void*> a = allocate_under(first, 96, 1);
    EXPECT_EQ(span_of(a[0]).shared_slot, 0);
    EXPECT_EQ(span_bin_of(a[0]), bin_of(first, class_of(96)));
    const unsigned second = tag_named("SharedSecondOfClass");
    const std::vector<void*> b = allocate_under(second, 96, 1);
    EXPECT_NE(span_of(b[0]).shared_slot, 0);
    deallocate(a[0]);
    deallocate(b[0]);
  });
}

// Once two tags are registered, the first tag to ask for blocks of a class takes them from a
// shared span as the others do: a tag that uses a class once (a vector that grows through it)
// takes part of a page of a shared span, not a span of its own.
TEST(SharedSpans, WithTwoTagsRegisteredTheFirstToAskForBlocksOfAClassTakesThemFromASharedSpan) {
  const unsigned first = tag_named("SharedOneOfTwo");
  const unsigned second = tag_named("SharedTwoOfTwo");
  on_a_new_thread([&] {
    const std::vector<void*> a = allocate_under(first, 96, 1);
    EXPECT_NE(span_of(a[0]).shared_slot, 0);
    EXPECT_EQ(span_bin_of(a[0]), class_of(96)) << "a shared span's record names the class";
    EXPECT_EQ(bin_of_block(a[0]), bin_of(first, class_of(96)));
    const std::vector<void*> b = allocate_under(second, 96, 1);
    EXPECT_EQ(span_index_of(b[0]), span_index_of(a[0]));
    EXPECT_EQ(bin_of_block(b[0]), bin_of(second, class_of(96)));
    deallocate(a[0]);
    deallocate(b[0]);
    EXPECT_EQ(live_blocks_of(first), 0u);
    EXPECT_EQ(live_blocks_of(second), 0u);
  });
}

// The untagged bins never take from shared spans: a program that pushes no tag allocates as it
// did.
TEST(SharedSpans, UntaggedBlocksComeFromSpansOfTheirOwnBin) {
  tag_named("SharedUnused");
  on_a_new_thread([&] {
    void* p = allocate(64);
    EXPECT_EQ(span_of(p).shared_slot, 0);
    EXPECT_EQ(decode_handed_out_block(p).handed_out, true);
    EXPECT_EQ(bin_of_block(p), class_of(64));
    deallocate(p);
  });
}

// A bin that had kYoungBinBytes of blocks out at once carves spans of its own from then on.
TEST(SharedSpans, ABinPastItsFirst16KiBOutCarvesSpansOfItsOwn) {
  claim_class(64);
  const unsigned tag = tag_named("SharedGrown");
  on_a_new_thread([&] {
    constexpr int kBlocks = 2 * kYoungBinBytes / 64;
    const std::vector<void*> blocks = allocate_under(tag, 64, kBlocks);
    EXPECT_NE(span_of(blocks.front()).shared_slot, 0);
    EXPECT_EQ(span_of(blocks.back()).shared_slot, 0);
    EXPECT_EQ(span_bin_of(blocks.back()), bin_of(tag, class_of(64)));
    EXPECT_EQ(class_counters(bin_of(tag, class_of(64))).spans, 1u);
    for (void* p : blocks) EXPECT_EQ(bin_of_block(p), bin_of(tag, class_of(64)));
    for (void* p : blocks) deallocate(p);
    EXPECT_EQ(live_blocks_of(tag), 0u);
  });
}

// A free from another thread, under another tag, discharges the tag of the block's run.
TEST(SharedSpans, AFreeFromAnotherThreadDischargesTheTagOfTheBlocksRun) {
  claim_class(256);
  const unsigned tag = tag_named("SharedRemote");
  const unsigned other = tag_named("SharedOther");
  std::vector<void*> blocks;
  on_a_new_thread([&] { blocks = allocate_under(tag, 256, 5); });
  EXPECT_EQ(live_blocks_of(tag), 5u);
  on_a_new_thread([&] {
    ASSERT_EQ(push_tag(static_cast<int>(other)), 0);
    for (void* p : blocks) deallocate(p);
    ASSERT_EQ(pop_tag(), static_cast<int>(other));
    const unsigned bin = bin_of(tag, class_of(256));
    EXPECT_EQ(CacheBins::of(*t_cache, bin).count(), 5u);
  });
  EXPECT_EQ(live_blocks_of(tag), 0u);
  EXPECT_EQ(live_blocks_of(other), 0u);
}

// A run whose blocks all came back goes to the next bin that needs one, of any tag, before a
// never-used run: its pages are resident already. A shared span that empties goes back to span
// carving, its slot of run tags free again.
TEST(SharedSpans, ARunWhoseBlocksAllCameBackGoesToAnotherTagAndAnEmptySpanGoesBack) {
  claim_class(1024);
  const unsigned first = tag_named("SharedReuseFirst");
  const unsigned second = tag_named("SharedReuseSecond");
  on_a_new_thread([&] {
    const std::vector<void*> a = allocate_under(first, 1024, 1);
    const std::vector<void*> kept = allocate_under(second, 1024, 1);
    const std::size_t span = span_index_of(a[0]);
    ASSERT_EQ(span_index_of(kept[0]), span);
    deallocate(a[0]);
    flush_thread_cache();  // the bins' blocks, taken ahead of the mallocs, go back to the span
    trim(0);
    const std::vector<void*> b = allocate_under(second, 1024, 1);
    EXPECT_EQ(b[0], a[0]) << "the run that came back, of the first tag, now the second's";
    EXPECT_EQ(bin_of_block(b[0]), bin_of(second, class_of(1024)));
    deallocate(b[0]);
    deallocate(kept[0]);
    flush_thread_cache();
    trim(0);
    EXPECT_EQ(span_at(span).shared_slot, 0);
    EXPECT_EQ(span_at(span).bin_plus_one, 0) << "released";
    EXPECT_EQ(class_counters(class_of(1024)).spans, 0u);
    EXPECT_EQ(bin_of_block(a[0]), kBinCount);
  });
}

// Blocks that came back to a run whose other blocks are out go to no other tag: the run's tag
// takes them again before a new run.
TEST(SharedSpans, ATagTakesTheBlocksThatCameBackToItsRunsBeforeANewRun) {
  claim_class(64);
  const unsigned tag = tag_named("SharedReturned");
  const unsigned other = tag_named("SharedReturnedOther");
  on_a_new_thread([&] {
    std::vector<void*> blocks = allocate_under(tag, 64, 3);
    const Span& span = span_of(blocks[0]);
    const std::uint32_t run = block_index_of(span, blocks[0]) / run_blocks(64);
    deallocate(blocks[1]);
    deallocate(blocks[2]);
    flush_thread_cache();
    trim(0);  // the run's blocks but blocks[0] back in the span
    const std::vector<void*> others = allocate_under(other, 64, 1);
    EXPECT_NE(block_index_of(span, others[0]) / run_blocks(64), run);
    const std::vector<void*> again = allocate_under(tag, 64, 1);
    EXPECT_EQ(span_index_of(again[0]), span_index_of(blocks[0]));
    EXPECT_EQ(block_index_of(span, again[0]) / run_blocks(64), run);
    deallocate(again[0]);
    deallocate(others[0]);
    deallocate(blocks[0]);
  });
}

// The blocks of a run that its bin has not handed out go back to their span at malloc_trim (and
// decay): a bin that took one block of a run of 32 keeps no shared span.
TEST(SharedSpans, TheBlocksOfARunNotHandedOutGoBackAtMallocTrim) {
  claim_class(16);
  const unsigned tag = tag_named("SharedLeftOver");
  on_a_new_thread([&] {
    const std::vector<void*> blocks = allocate_under(tag, 16, 1);
    const std::size_t span = span_index_of(blocks[0]);
    ASSERT_NE(span_at(span).shared_slot, 0);
    EXPECT_EQ(run_blocks(16), 32u);
    deallocate(blocks[0]);
    flush_thread_cache();
    trim(0);
    EXPECT_EQ(span_at(span).shared_slot, 0);
    EXPECT_EQ(span_at(span).bin_plus_one, 0) << "released";
  });
}

// While every slot of run tags serves a shared span (64), a tag's bin that would take a run
// carves a span of its own instead.
TEST(SharedSpans, WhileEverySlotOfRunTagsIsTakenATagsBinCarvesASpanOfItsOwn) {
  claim_class(1024);
  const unsigned tag = tag_named("SharedFull");
  const unsigned cls = class_of(2048);
  ASSERT_EQ(run_blocks(2048), 1u);
  std::size_t runs = 0;
  while (take_shared_run(bin_of(tag, cls)).span != nullptr) ++runs;
  EXPECT_EQ(runs, kSharedSpanSlots * (kSpanSize / 2048));
  on_a_new_thread([&] {
    const std::vector<void*> blocks = allocate_under(tag, 1024, 1);
    EXPECT_EQ(span_of(blocks[0]).shared_slot, 0);
    EXPECT_EQ(span_bin_of(blocks[0]), bin_of(tag, class_of(1024)));
    deallocate(blocks[0]);
  });
}

// What is no block of a run handed out is reported, as any pointer that malloc did not hand out.
TEST(SharedSpansDeathTest, AFreeInASharedSpanOfABlockNoRunHandedOutIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  claim_class(512);
  const unsigned tag = tag_named("SharedInvalid");
  const std::vector<void*> blocks = allocate_under(tag, 512, 1);
  EXPECT_EQ(bin_of_shared_block(blocks[0]), bin_of(tag, class_of(512)));
  // A run of a 512-byte class is one block; the one 16 blocks on is no run's yet.
  void* never = static_cast<std::byte*>(blocks[0]) + 16 * 512;
  EXPECT_EQ(bin_of_shared_block(never), kBinCount);
  EXPECT_DEATH(deallocate(never), "not a block that malloc handed out");
  deallocate(blocks[0]);
}

}  // namespace
