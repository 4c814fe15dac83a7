// Memory tags (poolalloc_tag_*): every allocation is charged to the tag current in its thread at
// its malloc, and its free, from any thread, discharges that same tag. Counts are asserted
// exactly: the blocks each test allocates under a tag are the only ones charged to it, since
// nothing else in the process pushes that tag. Allocations are made under a tag and the figures
// read after it is popped, so that what gtest allocates is never charged to it.
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "poolalloc/object_pool.hpp"
#include "poolalloc/poolalloc.h"
#include "poolalloc/tags.hpp"

namespace {

poolalloc_tag_stats stats_of(int id) {
  poolalloc_tag_stats stats{};
  EXPECT_EQ(poolalloc_get_tag_stats(id, &stats), 0) << id;
  return stats;
}

// Keeps the compiler from eliding an allocation whose block the test only frees.
void escape(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

// A tag of this test's own, registered under a name no other test uses.
int new_tag(const char* name) {
  const int id = poolalloc_tag_register(name);
  EXPECT_GT(id, 0) << name;
  return id;
}

TEST(MemoryTags, RegisteringANameTwiceReturnsTheSameIdAndTheStatsNameIt) {
  const int ai = new_tag("AI");
  EXPECT_EQ(poolalloc_tag_register("AI"), ai);
  std::string copy = "AI";  // the name is compared, not its address
  EXPECT_EQ(poolalloc_tag_register(copy.c_str()), ai);
  EXPECT_NE(poolalloc_tag_register("Audio"), ai);
  EXPECT_STREQ(stats_of(ai).name, "AI");
  EXPECT_STREQ(stats_of(POOLALLOC_TAG_UNTAGGED).name, "untagged");
}

// "untagged" is tag 0's name, so registering it is registering a name again: it returns that
// tag's id, 0, and takes no id of the 255.
TEST(MemoryTags, RegisteringTheNameUntaggedReturnsTheUntaggedIdAndTakesNoId) {
  const int before = new_tag("BeforeUntagged");
  EXPECT_EQ(poolalloc_tag_register("untagged"), POOLALLOC_TAG_UNTAGGED);
  EXPECT_EQ(poolalloc_tag_register("untagged"), POOLALLOC_TAG_UNTAGGED);
  EXPECT_EQ(new_tag("AfterUntagged"), before + 1);
  EXPECT_STREQ(stats_of(POOLALLOC_TAG_UNTAGGED).name, "untagged");
}

TEST(MemoryTags, RegisteringNoNameAnEmptyOrATooLongOneFailsWithEinval) {
  errno = 0;
  EXPECT_EQ(poolalloc_tag_register(nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(poolalloc_tag_register(""), -1);
  EXPECT_EQ(errno, EINVAL);
  const std::string longest(63, 'x');
  const std::string too_long(64, 'y');
  errno = 0;
  EXPECT_EQ(poolalloc_tag_register(too_long.c_str()), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_GT(poolalloc_tag_register(longest.c_str()), 0);
}

TEST(MemoryTags, PushOfAnUnregisteredOrOutOfRangeIdFailsWithEinvalAndChangesNothing) {
  const int tag = new_tag("PushChecks");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  poolalloc_tag_stats stats{};
  const bool last_registered = poolalloc_get_tag_stats(255, &stats) == 0;  // by another test
  for (const int id : {-1, 256, 1000, tag + 1, last_registered ? -2 : 255}) {
    errno = 0;
    EXPECT_EQ(poolalloc_tag_push(id), -1) << id;
    EXPECT_EQ(errno, EINVAL) << id;
    EXPECT_EQ(poolalloc_tag_current(), tag) << id;
  }
  EXPECT_EQ(poolalloc_tag_pop(), tag);
  EXPECT_EQ(poolalloc_tag_current(), POOLALLOC_TAG_UNTAGGED);
}

TEST(MemoryTags, StatsOfAnUnregisteredIdOrIntoNullFailWithEinval) {
  poolalloc_tag_stats stats{};
  errno = 0;
  EXPECT_EQ(poolalloc_get_tag_stats(-1, &stats), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(poolalloc_get_tag_stats(256, &stats), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(poolalloc_get_tag_stats(0, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(MemoryTags, PopMoreThanPushFailsWithEinvalAndChangesNothing) {
  const int tag = new_tag("PopChecks");
  errno = 0;
  EXPECT_EQ(poolalloc_tag_pop(), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  EXPECT_EQ(poolalloc_tag_pop(), tag);
  errno = 0;
  EXPECT_EQ(poolalloc_tag_pop(), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(poolalloc_tag_current(), POOLALLOC_TAG_UNTAGGED);
}

TEST(MemoryTags, NestedPushesChargeTheInnermostAndPopsRestoreTheOuter) {
  const int outer = new_tag("Outer");
  const int inner = new_tag("Inner");
  ASSERT_EQ(poolalloc_tag_push(outer), 0);
  void* a = malloc(64);
  ASSERT_EQ(poolalloc_tag_push(inner), 0);
  void* b = malloc(64);
  void* c = malloc(64);
  ASSERT_EQ(poolalloc_tag_push(POOLALLOC_TAG_UNTAGGED), 0);  // untagged inside a tagged scope
  const int current_untagged = poolalloc_tag_current();
  void* d = malloc(64);
  EXPECT_EQ(poolalloc_tag_pop(), POOLALLOC_TAG_UNTAGGED);
  const int current_inner = poolalloc_tag_current();
  EXPECT_EQ(poolalloc_tag_pop(), inner);
  const int current_outer = poolalloc_tag_current();
  void* e = malloc(64);
  EXPECT_EQ(poolalloc_tag_pop(), outer);
  EXPECT_EQ(current_untagged, POOLALLOC_TAG_UNTAGGED);
  EXPECT_EQ(current_inner, inner);
  EXPECT_EQ(current_outer, outer);
  EXPECT_EQ(stats_of(outer).live_blocks, 2u);
  EXPECT_EQ(stats_of(inner).live_blocks, 2u);
  for (void* p : {a, b, c, d, e}) free(p);
  EXPECT_EQ(stats_of(outer).live_blocks, 0u);
  EXPECT_EQ(stats_of(inner).live_blocks, 0u);
}

TEST(MemoryTags, TheStackHolds64TagsAndRefusesThe65thWithEoverflow) {
  const int tag = new_tag("Deep");
  for (int i = 0; i < 64; ++i) ASSERT_EQ(poolalloc_tag_push(tag), 0) << i;
  errno = 0;
  EXPECT_EQ(poolalloc_tag_push(POOLALLOC_TAG_UNTAGGED), -1);
  EXPECT_EQ(errno, EOVERFLOW);
  EXPECT_EQ(poolalloc_tag_current(), tag);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(poolalloc_tag_pop(), tag) << i;
  EXPECT_EQ(poolalloc_tag_pop(), -1);
}

TEST(MemoryTags, TagScopePushesForItsLifeAndPopsNothingWhenItsPushFailed) {
  const int tag = new_tag("Scoped");
  {
    const poolalloc::TagScope scope(tag);
    EXPECT_TRUE(scope.pushed());
    EXPECT_EQ(poolalloc_tag_current(), tag);
    {
      const poolalloc::TagScope refused(-7);
      EXPECT_FALSE(refused.pushed());
      EXPECT_EQ(poolalloc_tag_current(), tag);
    }
    EXPECT_EQ(poolalloc_tag_current(), tag);
  }
  EXPECT_EQ(poolalloc_tag_current(), POOLALLOC_TAG_UNTAGGED);
}

// The example: 1000 blocks of 48 bytes under a tag, freed by another thread.
TEST(MemoryTags, EachMallocChargesItsTagAndEachFreeFromAnyThreadDischargesIt) {
  const int tag = new_tag("Particles");
  std::vector<void*> blocks(1000);
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  for (void*& p : blocks) p = malloc(48);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  poolalloc_tag_stats stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 1000u);
  EXPECT_EQ(stats.live_bytes, 48000u);
  EXPECT_GE(stats.peak_bytes, 48000u);
  std::thread([&] {
    for (std::size_t i = 0; i < 500; ++i) free(blocks[i]);
  }).join();
  stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 500u);
  EXPECT_EQ(stats.live_bytes, 24000u);
  std::thread([&] {
    for (std::size_t i = 500; i < 1000; ++i) free(blocks[i]);
  }).join();
  stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_GE(stats.peak_bytes, 48000u) << "the peak stays";
}

// A tag's first blocks of a size class come from runs of its own (11 blocks of 48 bytes, 528
// bytes) in spans of the class that tags share, unless it was the first tag to ask for the class;
// once it had 16 KiB of them out, from spans of its own. So blocks of two tags never share a run,
// and past their first 16 KiB (342 blocks of 48 bytes, and what a refill takes ahead of the
// mallocs) never a span.
TEST(MemoryTags, BlocksOfTwoTagsShareNoRunAndPastTheirFirst16KiBNoSpan) {
  // The first tag to ask for 48-byte blocks takes spans of its own from the start.
  const int claim = new_tag("SpanClaim");
  poolalloc_tag_push(claim);
  void* claimed = malloc(48);
  poolalloc_tag_pop();
  const int first = new_tag("SpanFirst");
  const int second = new_tag("SpanSecond");
  constexpr int kBlocks = 3000;  // more than a 128 KiB span holds of 48-byte blocks
  constexpr int kYoung = 600;
  std::vector<void*> a(kBlocks), b(kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    poolalloc_tag_push(first);
    a[i] = malloc(48);
    poolalloc_tag_pop();
    poolalloc_tag_push(second);
    b[i] = malloc(48);
    poolalloc_tag_pop();
  }
  const auto span = [](void* p) { return reinterpret_cast<std::uintptr_t>(p) >> 17; };
  const auto run = [](void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 0x1ffff) / 48 / 11;
  };
  EXPECT_EQ(span(a[0]), span(b[0])) << "the first blocks share a span";
  std::set<std::pair<std::uintptr_t, std::uintptr_t>> runs_a;
  for (void* p : a) runs_a.insert({span(p), run(p)});
  for (void* p : b) EXPECT_EQ(runs_a.count({span(p), run(p)}), 0u) << p << " shares a run";
  std::set<std::uintptr_t> late_spans_a;
  for (int i = kYoung; i < kBlocks; ++i) late_spans_a.insert(span(a[i]));
  for (int i = kYoung; i < kBlocks; ++i)
    EXPECT_EQ(late_spans_a.count(span(b[i])), 0u) << i << ": a span holds blocks of both tags";
  for (int i = 0; i < kBlocks; ++i) {
    free(a[i]);
    free(b[i]);
  }
  free(claimed);
  EXPECT_EQ(stats_of(first).live_blocks, 0u);
  EXPECT_EQ(stats_of(second).live_blocks, 0u);
}

// The statistics' totals count the blocks of every tag.
TEST(MemoryTags, PoolallocStatsCountTaggedBlocksToo) {
  const int tag = new_tag("Totals");
  std::vector<void*> blocks(1000);
  poolalloc_stats before{}, during{}, after{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  for (void*& p : blocks) p = malloc(96);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  ASSERT_EQ(poolalloc_get_stats(&during), 0);
  for (void* p : blocks) free(p);
  ASSERT_EQ(poolalloc_get_stats(&after), 0);
  EXPECT_EQ(during.pooled_live - before.pooled_live, 1000u);
  EXPECT_EQ(during.pooled_requests - before.pooled_requests, 1000u);
  EXPECT_EQ(after.pooled_live, before.pooled_live);
}

// live_bytes counts a pooled block's usable bytes: a request rounded up to its size class counts
// the class.
TEST(MemoryTags, LiveBytesCountTheBlocksUsableSize) {
  const int tag = new_tag("Usable");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* p = malloc(200);  // the class of 208 bytes
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  EXPECT_EQ(stats_of(tag).live_bytes, malloc_usable_size(p));
  EXPECT_EQ(stats_of(tag).live_bytes, 208u);
  free(p);
  EXPECT_EQ(stats_of(tag).live_bytes, 0u);
}

TEST(MemoryTags, AnUntaggedProgramsBlocksAreChargedToUntagged) {
  std::vector<void*> blocks(1000);
  const poolalloc_tag_stats before = stats_of(POOLALLOC_TAG_UNTAGGED);
  for (void*& p : blocks) p = malloc(80);
  const poolalloc_tag_stats during = stats_of(POOLALLOC_TAG_UNTAGGED);
  for (void* p : blocks) free(p);
  const poolalloc_tag_stats after = stats_of(POOLALLOC_TAG_UNTAGGED);
  EXPECT_EQ(during.live_blocks - before.live_blocks, 1000u);
  EXPECT_EQ(during.live_bytes - before.live_bytes, 80000u);
  EXPECT_EQ(after.live_blocks, before.live_blocks);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(during.peak_bytes, during.live_bytes);
}

TEST(MemoryTags, CallocAlignedFormsAndOperatorNewAreChargedToTheCurrentTag) {
  const int tag = new_tag("Forms");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* zeroed = calloc(10, 10);          // 112 bytes
  void* aligned = aligned_alloc(64, 64);  // 64
  void* posix = nullptr;
  const int posix_result = posix_memalign(&posix, 256, 100);  // 256
  void* memaligned = memalign(4096, 4096);                    // 4096
  int* array = new int[10];                                   // 48
  auto* object = new std::uint64_t(7);                        // 16
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  escape(array);
  escape(object);
  ASSERT_EQ(posix_result, 0);
  const poolalloc_tag_stats stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 6u);
  EXPECT_EQ(stats.live_bytes, 112u + 64 + 256 + 4096 + 48 + 16);
  free(zeroed);
  free(aligned);
  free(posix);
  free(memaligned);
  delete[] array;
  delete object;
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
  EXPECT_EQ(stats_of(tag).live_bytes, 0u);
}

TEST(MemoryTags, BlocksAboveThePoolsAreChargedAndDischargedFromAnyThread) {
  const int tag = new_tag("Textures");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* large = malloc(1 << 20);
  void* huge = malloc(16 << 20);
  void* zeroed = calloc(1, 100 << 10);
  void* aligned = aligned_alloc(1 << 16, 1 << 16);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  // Blocks above the pools count the bytes asked for.
  const std::uint64_t bytes = (1 << 20) + (16 << 20) + (100 << 10) + (1 << 16);
  poolalloc_tag_stats stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 4u);
  EXPECT_EQ(stats.live_bytes, bytes);
  EXPECT_GE(stats.peak_bytes, bytes);
  std::thread([&] {
    free(large);
    free(huge);
  }).join();
  free(zeroed);
  free(aligned);
  stats = stats_of(tag);
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
}

// Decided: the block realloc returns is charged to the tag current at the realloc when it is a
// new block; a block that stays where it is (the new size fits its class) keeps its charge.
// (A pooled block grown past the pools always moves, into a block of glibc's.)
TEST(MemoryTags, ReallocUnderAnotherTagChargesAMovedBlockToTheCurrentTag) {
  const int first = new_tag("ReallocFirst");
  const int second = new_tag("ReallocSecond");
  ASSERT_EQ(poolalloc_tag_push(first), 0);
  void* small = malloc(48);
  void* large = malloc(1000);
  ASSERT_EQ(poolalloc_tag_pop(), first);
  ASSERT_EQ(poolalloc_tag_push(second), 0);
  void* same = realloc(small, 40);  // fits its 48-byte block: stays, charged as it was
  void* moved = realloc(same, 200);
  void* grown = realloc(large, 1 << 20);
  ASSERT_EQ(poolalloc_tag_pop(), second);
  EXPECT_EQ(same, small);
  const poolalloc_tag_stats a = stats_of(first);
  const poolalloc_tag_stats b = stats_of(second);
  EXPECT_EQ(a.live_blocks, 0u);
  EXPECT_EQ(a.live_bytes, 0u);
  EXPECT_EQ(b.live_blocks, 2u);
  EXPECT_EQ(b.live_bytes, 208u + (1 << 20));
  free(moved);
  free(grown);
  EXPECT_EQ(stats_of(second).live_blocks, 0u);
  EXPECT_EQ(stats_of(second).live_bytes, 0u);
}

// A block above the pools that glibc resizes in place (shrunk here, which glibc does in place)
// keeps its tag, as a pooled block that fits its class does, whatever tag is current at the
// realloc; it counts the bytes of the new request.
TEST(MemoryTags, ABlockAboveThePoolsThatReallocKeepsInPlaceKeepsItsTag) {
  const int first = new_tag("InPlaceFirst");
  const int second = new_tag("InPlaceSecond");
  ASSERT_EQ(poolalloc_tag_push(first), 0);
  void* p = malloc(100000);
  ASSERT_EQ(poolalloc_tag_pop(), first);
  ASSERT_EQ(poolalloc_tag_push(second), 0);
  void* shrunk = realloc(p, 90000);
  ASSERT_EQ(poolalloc_tag_pop(), second);
  void* shrunk_untagged = realloc(shrunk, 80000);
  ASSERT_EQ(shrunk, p) << "glibc moved the block: this test needs one kept in place";
  ASSERT_EQ(shrunk_untagged, p) << "glibc moved the block: this test needs one kept in place";
  EXPECT_EQ(poolalloc_owns(p), 0);
  const poolalloc_tag_stats a = stats_of(first);
  const poolalloc_tag_stats b = stats_of(second);
  EXPECT_EQ(a.live_blocks, 1u);
  EXPECT_EQ(a.live_bytes, 80000u);
  EXPECT_EQ(b.live_blocks, 0u);
  EXPECT_EQ(b.live_bytes, 0u);
  free(shrunk_untagged);
  EXPECT_EQ(stats_of(first).live_blocks, 0u);
  EXPECT_EQ(stats_of(first).live_bytes, 0u);
}

// A realloc that glibc cannot serve changes no charge: the block is untouched.
TEST(MemoryTags, AFailedReallocOfABlockAboveThePoolsKeepsItsCharge) {
  const int tag = new_tag("FailedRealloc");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* p = malloc(100000);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  EXPECT_EQ(realloc(p, SIZE_MAX / 2), nullptr);
  EXPECT_EQ(stats_of(tag).live_blocks, 1u);
  EXPECT_EQ(stats_of(tag).live_bytes, 100000u);
  free(p);
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
}

// With the heap profile sampling every allocation, a realloc's new block is a sampled one that
// the block moves into: the old block's charge leaves before the new one's is made, so that the
// tag never holds both (its peak is the larger block, not the sum).
TEST(MemoryTags, AReallocIntoASampledBlockNeverChargesTheTagWithBothBlocks) {
  const int tag = new_tag("SampledRealloc");
  ASSERT_EQ(poolalloc_profile_sample(1),
            0);  // before the push: it loads libunwind, which allocates
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* p = malloc(size_t{1} << 20);
  p = realloc(p, size_t{2} << 20);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  ASSERT_EQ(poolalloc_profile_sample(0), 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(stats_of(tag).live_bytes, size_t{2} << 20);
  EXPECT_EQ(stats_of(tag).peak_bytes, size_t{2} << 20);
  free(p);
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
}

TEST(MemoryTags, AThreadThatExitsWithTagsPushedLeavesNoTraceAndItsBlocksStayCharged) {
  const int tag = new_tag("Exiting");
  std::vector<void*> blocks(100);
  int pushed = 0;
  std::thread([&] {
    pushed += poolalloc_tag_push(tag) == 0;
    pushed += poolalloc_tag_push(tag) == 0;
    for (void*& p : blocks) p = malloc(32);
  }).join();
  ASSERT_EQ(pushed, 2);
  // The next threads take the exited thread's cache first: they start untagged.
  for (int i = 0; i < 4; ++i) {
    int current = -1;
    void* untagged = nullptr;
    std::thread([&] {
      untagged = malloc(32);
      current = poolalloc_tag_current();
    }).join();
    EXPECT_EQ(current, POOLALLOC_TAG_UNTAGGED);
    free(untagged);
  }
  EXPECT_EQ(stats_of(tag).live_blocks, 100u);
  for (void* p : blocks) free(p);
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
}

// peak_bytes counts the bytes of the tag's blocks out of their spans: a refill takes a batch of
// blocks into the thread's cache ahead of the mallocs that hand them out, so a new tag's first
// malloc(16) shows a peak of the batch (half the bin's first limit: 8 blocks), not of 16 bytes.
// Counting only the blocks handed out would cost every malloc and free (statistics.md).
TEST(MemoryTags, PeakBytesCountTheBlocksARefillTookIntoTheThreadCache) {
  const int tag = new_tag("RefillPeak");
  void* p = nullptr;
  std::thread([&] {
    ASSERT_EQ(poolalloc_tag_push(tag), 0);
    p = malloc(16);
    ASSERT_EQ(poolalloc_tag_pop(), tag);
  }).join();  // its cache's blocks go to the central stack: still out of their spans
  const poolalloc_tag_stats stats = stats_of(tag);
  EXPECT_EQ(stats.live_bytes, 16u);
  EXPECT_EQ(stats.peak_bytes, 8u * 16);
  free(p);
  malloc_trim(0);  // every free block back into its span
  EXPECT_EQ(stats_of(tag).peak_bytes, 8u * 16) << "the peak stays";
}

// What poolalloc allocates for itself under the program's tag is charged to no tag: here, what
// glibc's dynamic loader allocates as poolalloc first looks up glibc's malloc_usable_size, for a
// block glibc served. (The lookup is made once per process: run alone, as ctest runs each test,
// this is the first.)
TEST(MemoryTags, WhatPoolallocLooksUpInGlibcUnderATagIsChargedToNoTag) {
  const int tag = new_tag("LookUp");
  void* large = malloc(1 << 20);
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  const std::size_t usable = malloc_usable_size(large);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  EXPECT_GE(usable, std::size_t{1} << 20);
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
  EXPECT_EQ(stats_of(tag).live_bytes, 0u);
  free(large);
}

// Turning the heap profile on loads libunwind, whose loading allocates: charged to no tag, though
// a tag is current. (Loaded once per process: run alone, as ctest runs each test, this is the
// first.)
TEST(MemoryTags, WhatTurningTheProfileOnLoadsUnderATagIsChargedToNoTag) {
  const int tag = new_tag("ProfileOn");
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  ASSERT_EQ(poolalloc_profile_sample(1 << 20), 0);
  ASSERT_EQ(poolalloc_tag_pop(), tag);
  ASSERT_EQ(poolalloc_profile_sample(0), 0);
  EXPECT_EQ(stats_of(tag).live_blocks, 0u);
  EXPECT_EQ(stats_of(tag).live_bytes, 0u);
}

// A job system: a pool of workers, each job pushing its own tag on the worker that runs it.
TEST(MemoryTags, AJobSystemChargesEachJobsAllocationsToItsTag) {
  constexpr int kTags = 6;
  constexpr int kJobs = 300;
  constexpr int kBlocksPerJob = 50;
  int tags[kTags];
  for (int t = 0; t < kTags; ++t) tags[t] = new_tag(("Job" + std::to_string(t)).c_str());
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool done = false;
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (;;) {
        std::function<void()> job;
        {
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait(lock, [&] { return done || !jobs.empty(); });
          if (jobs.empty()) return;
          job = std::move(jobs.front());
          jobs.pop_front();
        }
        job();
      }
    });
  }
  std::vector<std::vector<void*>> results(kJobs, std::vector<void*>(kBlocksPerJob));
  for (int j = 0; j < kJobs; ++j) {
    const int tag = tags[j % kTags];
    std::lock_guard<std::mutex> lock(mutex);
    jobs.emplace_back([&results, j, tag] {
      const poolalloc::TagScope scope(tag);  // the job's tag, for the length of the job
      for (int b = 0; b < kBlocksPerJob; ++b) results[j][b] = malloc(16 + 16 * (b % 8));
    });
    wake.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  wake.notify_all();
  for (std::thread& worker : workers) worker.join();
  // Each job allocated sizes 16 .. 128 in turn: 50 blocks, 6 rounds of 8 and 16 + 32.
  constexpr std::uint64_t kJobBytes = 6 * (16 + 32 + 48 + 64 + 80 + 96 + 112 + 128) + 16 + 32;
  for (int t = 0; t < kTags; ++t) {
    const poolalloc_tag_stats stats = stats_of(tags[t]);
    EXPECT_EQ(stats.live_blocks, std::uint64_t{kJobs / kTags} * kBlocksPerJob) << t;
    EXPECT_EQ(stats.live_bytes, std::uint64_t{kJobs / kTags} * kJobBytes) << t;
  }
  for (auto& job : results)
    for (void* p : job) free(p);
  for (int t = 0; t < kTags; ++t) EXPECT_EQ(stats_of(tags[t]).live_blocks, 0u) << t;
}

// Several threads, each under its own tag, hand their blocks to the next thread, which frees
// them: the totals are exact at the end, and back to nothing once all is freed.
TEST(MemoryTags, StressThreadsFreeingEachOthersTaggedBlocksKeepExactTotals) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  constexpr int kPerRound = 64;
  const unsigned seed = 20240611;
  std::printf("seed %u\n", seed);
  int tags[kThreads];
  for (int t = 0; t < kThreads; ++t) tags[t] = new_tag(("Stress" + std::to_string(t)).c_str());
  struct Mailbox {
    std::mutex mutex;
    std::vector<void*> blocks;
  };
  Mailbox boxes[kThreads];
  std::vector<void*> kept[kThreads];
  std::uint64_t kept_bytes[kThreads] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(seed + t);
      kept[t].reserve(kRounds * kPerRound);
      std::vector<void*> batch;
      batch.reserve(kPerRound);
      std::vector<void*> inbox;
      inbox.reserve(kRounds * kPerRound);
      for (int round = 0; round < kRounds; ++round) {
        ASSERT_EQ(poolalloc_tag_push(tags[t]), 0);
        for (int i = 0; i < kPerRound; ++i) {
          const std::size_t size = 1 + random() % 2048;
          void* p = malloc(size);
          if (random() % 4 == 0) {
            kept[t].push_back(p);
            kept_bytes[t] += malloc_usable_size(p);
          } else {
            batch.push_back(p);
          }
        }
        ASSERT_EQ(poolalloc_tag_pop(), tags[t]);
        {
          Mailbox& next = boxes[(t + 1) % kThreads];
          std::lock_guard<std::mutex> lock(next.mutex);
          next.blocks.insert(next.blocks.end(), batch.begin(), batch.end());
        }
        batch.clear();
        {
          std::lock_guard<std::mutex> lock(boxes[t].mutex);
          inbox.swap(boxes[t].blocks);
        }
        for (void* p : inbox) free(p);
        inbox.clear();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (Mailbox& box : boxes)
    for (void* p : box.blocks) free(p);
  for (int t = 0; t < kThreads; ++t) {
    const poolalloc_tag_stats stats = stats_of(tags[t]);
    EXPECT_EQ(stats.live_blocks, kept[t].size()) << t;
    EXPECT_EQ(stats.live_bytes, kept_bytes[t]) << t;
    EXPECT_GE(stats.peak_bytes, kept_bytes[t]) << t;
  }
  for (int t = 0; t < kThreads; ++t)
    for (void* p : kept[t]) free(p);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(stats_of(tags[t]).live_blocks, 0u) << t;
    EXPECT_EQ(stats_of(tags[t]).live_bytes, 0u) << t;
  }
}

TEST(MemoryTags, TwoHundredFiftyFiveTagsCanBeRegisteredAndUsedAndNoMore) {
  // Last in the file, as it leaves no tag to register; other tests of this process may have
  // registered some: register until ENOSPC.
  std::vector<int> ids;
  for (int i = 0;; ++i) {
    const int id = poolalloc_tag_register(("Many" + std::to_string(i)).c_str());
    if (id == -1) {
      EXPECT_EQ(errno, ENOSPC);
      break;
    }
    ids.push_back(id);
    ASSERT_LT(i, 300);
  }
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), 255);
  std::vector<void*> blocks;
  blocks.reserve(2 * ids.size());  // so that no growth of the vector is charged to a tag
  for (const int id : ids) {
    ASSERT_EQ(poolalloc_tag_push(id), 0);
    blocks.push_back(malloc(64));
    blocks.push_back(malloc(1000));
    ASSERT_EQ(poolalloc_tag_pop(), id);
  }
  for (const int id : ids) {
    EXPECT_EQ(stats_of(id).live_blocks, 2u) << id;
    EXPECT_EQ(stats_of(id).live_bytes, 64u + 1024) << id;
  }
  for (void* p : blocks) free(p);
  for (const int id : ids) EXPECT_EQ(stats_of(id).live_blocks, 0u) << id;
}

// A growable Pool<T> keeps its slots in address space it reserves itself: no tag is charged for
// them, only for the pool's bookkeeping (about 5 bytes a slot). One grown with
// Growth::growable_from_new takes them from operator new, under the tag pushed.
template <poolalloc::Growth kGrowth>
std::uint64_t bytes_charged_for_a_pool_of(std::size_t objects, const char* tag_name) {
  struct Particle {
    float values[16];
  };
  const int tag = new_tag(tag_name);
  poolalloc::Pool<Particle> pool(0, kGrowth);
  EXPECT_EQ(poolalloc_tag_push(tag), 0);
  for (std::size_t i = 0; i < objects; ++i) EXPECT_NE(pool.spawn(), nullptr);
  EXPECT_EQ(poolalloc_tag_pop(), tag);
  return stats_of(tag).live_bytes;
}

TEST(MemoryTags, AGrowablePoolsSlotsAreChargedToNoTagAndThoseOfAPoolGrownFromNewAre) {
  constexpr std::size_t kObjects = 10'000;
  EXPECT_LT(bytes_charged_for_a_pool_of<poolalloc::Growth::growable>(kObjects, "PoolInPlace"),
            kObjects * 16);
  EXPECT_GE(
      bytes_charged_for_a_pool_of<poolalloc::Growth::growable_from_new>(kObjects, "PoolFromNew"),
      kObjects * 72);
}

}  // namespace
