// Memory tags in the core: a block's tag is its bin's (its span's, or its run's in a shared span:
// shared_spans_test.cpp), a thread's bins of a tag get slots at its first slow path for the tag,
// and a free from any thread goes to the block's own tag's bin. Run under ThreadSanitizer too (the
// threads' test), which the exported malloc cannot be.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "allocator.hpp"
#include "central_lists.hpp"
#include "pool_region.hpp"
#include "stats.hpp"
#include "tag_registry.hpp"
#include "tag_test_helpers.hpp"
#include "tagged_system_blocks.hpp"
#include "thread_cache.hpp"

namespace {

using namespace poolalloc::internal;
using core_test::on_a_new_thread;
using core_test::tag_named;

TEST(Tags, ABlocksBinIsTheOneOfTheTagCurrentAtItsMalloc) {
  const int tag = tag_named("CoreSpan");
  on_a_new_thread([&] {
    void* untagged = allocate(64);
    ASSERT_EQ(push_tag(tag), 0);
    void* tagged = allocate(64);
    void* aligned = allocate_aligned(256, 256);
    ASSERT_EQ(pop_tag(), tag);
    EXPECT_EQ(span_bin_of(untagged), class_of(64));
    EXPECT_EQ(bin_of_block(untagged), class_of(64));
    EXPECT_EQ(bin_of_block(tagged), bin_of(static_cast<unsigned>(tag), class_of(64)));
    EXPECT_EQ(bin_of_block(aligned), bin_of(static_cast<unsigned>(tag), class_of(256)));
    EXPECT_EQ(class_of_block(tagged), class_of(64));
    EXPECT_EQ(usable_size(tagged), 64u);
    deallocate(untagged);
    deallocate(tagged);
    deallocate(aligned);
  });
}

TEST(Tags, AThreadsBinsOfATagGetSlotsAtItsFirstSlowPathForTheTag) {
  const int tag = tag_named("CoreSlots");
  on_a_new_thread([&] {
    deallocate(allocate(64));  // the thread's cache, untagged
    EXPECT_EQ(CacheBins::tag_bins(*t_cache, static_cast<unsigned>(tag)), nullptr);
    const unsigned bin = bin_of(static_cast<unsigned>(tag), class_of(64));
    EXPECT_EQ(CacheBins::of(*t_cache, bin).bottom_slot(), nullptr);
    ASSERT_EQ(push_tag(tag), 0);
    void* block = allocate(64);
    ASSERT_EQ(pop_tag(), tag);
    EXPECT_NE(CacheBins::tag_bins(*t_cache, static_cast<unsigned>(tag)), nullptr);
    const std::uint32_t cached = CacheBins::of(*t_cache, bin).count();
    deallocate(block);  // untagged now, yet into the tag's bin: the block's own
    EXPECT_EQ(CacheBins::of(*t_cache, bin).count(), cached + 1);
  });
}

TEST(Tags, AFreeOfAnotherThreadsTaggedBlockGivesItSlotsForThatTag) {
  const int tag = tag_named("CoreRemoteFree");
  void* block = nullptr;
  on_a_new_thread([&] {
    ASSERT_EQ(push_tag(tag), 0);
    block = allocate(128);
    ASSERT_EQ(pop_tag(), tag);
  });
  on_a_new_thread([&] {
    deallocate(allocate(16));  // a cache without the tag's slots
    const unsigned bin = bin_of(static_cast<unsigned>(tag), class_of(128));
    deallocate(block);
    ASSERT_NE(CacheBins::tag_bins(*t_cache, static_cast<unsigned>(tag)), nullptr);
    EXPECT_EQ(CacheBins::of(*t_cache, bin).count(), 1u);
    EXPECT_EQ(*(CacheBins::of(*t_cache, bin).top_slot() - 1), block);
  });
}

TEST(Tags, ThreadsFreeingEachOthersTaggedBlocksLeaveEachTagExact) {
  constexpr int kThreads = 4;
  constexpr int kBlocks = 2000;
  int tags[kThreads];
  for (int t = 0; t < kThreads; ++t)
    tags[t] = tag_named(("CoreThreads" + std::to_string(t)).c_str());
  std::vector<std::vector<void*>> blocks(kThreads, std::vector<void*>(kBlocks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_EQ(push_tag(tags[t]), 0);
      for (int i = 0; i < kBlocks; ++i) blocks[t][i] = allocate(16 + 16 * (i % 32));
      ASSERT_EQ(pop_tag(), tags[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    poolalloc_tag_stats stats{};
    ASSERT_TRUE(collect_tag_stats(tags[t], stats));
    EXPECT_EQ(stats.live_blocks, std::uint64_t{kBlocks}) << t;
  }
  // Each thread frees its neighbour's blocks under its own tag, allocating as it goes.
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_EQ(push_tag(tags[t]), 0);
      for (void* p : blocks[(t + 1) % kThreads]) {
        deallocate(allocate(48));
        deallocate(p);
      }
      ASSERT_EQ(pop_tag(), tags[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    poolalloc_tag_stats stats{};
    ASSERT_TRUE(collect_tag_stats(tags[t], stats));
    EXPECT_EQ(stats.live_blocks, 0u) << t;
    EXPECT_EQ(stats.live_bytes, 0u) << t;
    EXPECT_GE(stats.peak_bytes, std::uint64_t{kBlocks} * 16) << t;
  }
}

// `rounds` times, 1,000 blocks of `size` bytes allocated under `tag`, then freed: a bin's traffic
// that grows it as far as it may grow.
void churn_under(int tag, std::size_t size, int rounds) {
  ASSERT_EQ(push_tag(tag), 0);
  std::vector<void*> blocks(1000);
  for (int round = 0; round < rounds; ++round) {
    for (void*& p : blocks) p = allocate(size);
    for (void* p : blocks) deallocate(p);
  }
  ASSERT_EQ(pop_tag(), tag);
}

std::uint64_t live_blocks_of(int tag) {
  poolalloc_tag_stats stats{};
  EXPECT_TRUE(collect_tag_stats(tag, stats));
  return stats.live_blocks;
}

// While two or more tags are registered, a tag's full bin gives its older half back into the
// spans, past the tag's central stack: no page of the stack is written.
TEST(Tags, WhileTwoTagsAreRegisteredATagsFullBinGivesBackIntoTheSpansPastItsStack) {
  const int tag = tag_named("CoreIntoSpans");
  tag_named("CoreIntoSpansOther");
  on_a_new_thread([&] {
    churn_under(tag, 64, 3);
    const unsigned bin = bin_of(static_cast<unsigned>(tag), class_of(64));
    EXPECT_EQ(CacheBins::of(*t_cache, bin).limit(), bin_capacity(class_of(64)));
    EXPECT_EQ(class_counters(bin).stacked, 0u);
    EXPECT_EQ(class_counters(bin).blocks_out, CacheBins::of(*t_cache, bin).count());
    EXPECT_EQ(live_blocks_of(tag), 0u);
  });
}

// While one tag is registered (a program that pushes one), a tag's full bin gives its older half
// to its central stack, as an untagged one does.
TEST(Tags, WhileOneTagIsRegisteredATagsFullBinGivesToItsStack) {
  const int tag = tag_named("CoreOneTagStack");
  on_a_new_thread([&] {
    churn_under(tag, 64, 3);
    const unsigned bin = bin_of(static_cast<unsigned>(tag), class_of(64));
    EXPECT_EQ(CacheBins::of(*t_cache, bin).limit(), bin_capacity(class_of(64)));
    EXPECT_GT(class_counters(bin).stacked, 0u);
    EXPECT_EQ(live_blocks_of(tag), 0u);
  });
}

// Blocks freed while fork() holds their bin's lock wait in its orphan list for the lock's next
// holder: free, not live, in the tag's figures meanwhile.
TEST(Tags, BlocksFreedWhileForkHoldsTheirBinCountAsFreeNotLive) {
  const int tag = tag_named("CoreOrphans");
  constexpr int kBlocks = 2000;  // more than a thread's bin holds: frees overflow into the lists
  std::vector<void*> blocks(kBlocks);
  on_a_new_thread([&] {
    ASSERT_EQ(push_tag(tag), 0);
    for (void*& p : blocks) p = allocate(48);
    ASSERT_EQ(pop_tag(), tag);
  });
  poolalloc_tag_stats stats{};
  ASSERT_TRUE(collect_tag_stats(tag, stats));
  EXPECT_EQ(stats.live_blocks, std::uint64_t{kBlocks});
  lock_central_lists_for_fork();
  on_a_new_thread([&] {
    for (void* p : blocks) deallocate(p);
  });
  ASSERT_TRUE(collect_tag_stats(tag, stats));
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  unlock_central_lists_after_fork(false);
  ASSERT_TRUE(collect_tag_stats(tag, stats));
  EXPECT_EQ(stats.live_blocks, 0u);
}

// While fork() holds the table of tagged system blocks, another thread's records and removals
// wait in its log (reads see the table as it was); the end of the fork replays them.
TEST(Tags, SystemBlocksChargedAndFreedWhileForkHoldsTheTableCountOnceItEnds) {
  const int tag = tag_named("CoreSystemFork");
  const auto id = static_cast<unsigned>(tag);
  alignas(16) static char blocks[4][16];  // addresses only: the table never touches a block
  on_a_new_thread([&] {
    ASSERT_EQ(push_tag(tag), 0);
    charge_system_block(blocks[0], 100);
    ASSERT_EQ(pop_tag(), tag);
  });
  lock_tagged_system_blocks_for_fork();
  on_a_new_thread([&] {
    ASSERT_EQ(push_tag(tag), 0);
    charge_system_block(blocks[1], 200);
    charge_system_block(blocks[2], 300);
    const SystemCharge recorded_before = discharge_system_block(blocks[0]);
    const SystemCharge recorded_meanwhile = discharge_system_block(blocks[2]);
    recharge_system_block(blocks[3], {id, 50, true});
    ASSERT_EQ(pop_tag(), tag);
    EXPECT_TRUE(recorded_before.found);
    EXPECT_EQ(recorded_before.bytes, 100u);
    EXPECT_TRUE(recorded_meanwhile.found);
    EXPECT_EQ(recorded_meanwhile.tag, id);
    EXPECT_EQ(recorded_meanwhile.bytes, 300u);
    EXPECT_FALSE(discharge_system_block(blocks[2]).found);  // removed already, in the log
  });
  EXPECT_EQ(tagged_system_usage(id).blocks, 1u);  // as before the fork
  unlock_tagged_system_blocks_after_fork(false);
  EXPECT_EQ(tagged_system_usage(id).blocks, 2u);
  EXPECT_EQ(tagged_system_usage(id).bytes, 250u);
  EXPECT_TRUE(discharge_system_block(blocks[1]).found);
  EXPECT_TRUE(discharge_system_block(blocks[3]).found);
  EXPECT_EQ(tagged_system_usage(id).blocks, 0u);
  EXPECT_EQ(tagged_system_usage(id).bytes, 0u);
}

}  // namespace
