// Thread caches: per thread and class a bin of free blocks, bounded by a limit that starts at a
// thirty-second of the bin's capacity (at least 2) and doubles with traffic up to the capacity, a
// batch (central_lists.hpp). An empty bin refills with half its limit; a full one at its capacity
// gives its older half to the central lists. Each test runs on a thread of its own, whose cache
// starts with every bin empty at its initial limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "thread_handoff.hpp"

#include "allocator.hpp"
#include "central_lists.hpp"
#include "decay_requests.hpp"
#include "free_block_marks.hpp"
#include "size_classes.hpp"
#include "thread_cache.hpp"

namespace {

using namespace poolalloc::internal;

// Blocks of 4 KiB: a bin holds at most 32 of them, and starts holding 2.
constexpr std::size_t kSize = 4096;
constexpr std::uint32_t kCapacity = bin_capacity(class_of_medium(kSize));
constexpr std::uint32_t kInitialLimit = initial_limit(class_of_medium(kSize));
static_assert(kCapacity == 32 && kInitialLimit == 2);

template <class Body>
void on_a_new_thread(Body body) {
  std::thread(body).join();
}

CacheBin& bin_of(std::size_t size) {
  return CacheBins::of(*t_cache, class_of(size));
}

// Blocks of the class outside the central lists: in thread caches or in the program's hands.
std::uint64_t outside_central(unsigned cls) {
  const ClassCounters counters = class_counters(cls);
  return counters.blocks_out - counters.stacked;
}

// Whether reclaim_caches() can take blocks from other threads' bins: membarrier(2) orders them,
// and ThreadSanitizer, which cannot see that order, is not watching.
bool caches_can_be_reclaimed() {
#if defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return false;
#endif
#endif
  return os_membarrier();  // the allocator's start-up registered the process
}

TEST(ThreadCache, AThreadHasACacheFromItsFirstAllocationToItsExit) {
  const std::uint64_t live = live_thread_caches();
  on_a_new_thread([&] {
    EXPECT_EQ(t_cache, &g_empty_cache);
    EXPECT_EQ(live_thread_caches(), live);
    void* block = allocate(kSize);
    EXPECT_NE(t_cache, &g_empty_cache);
    EXPECT_EQ(live_thread_caches(), live + 1);
    deallocate(block);
  });
  EXPECT_EQ(live_thread_caches(), live);
}

// Blocks given back to the central lists, which the refills take whole (never-used blocks come
// a page's worth a refill: the test below).
TEST(ThreadCache, AnEmptyBinRefillsWithHalfItsLimitAndDoublesItUpToItsCapacity) {
  ASSERT_EQ(bin_capacity(class_of(kSize)), kCapacity);
  on_a_new_thread([] {
    const unsigned cls = class_of(kSize);
    void* stacked[32];
    ASSERT_EQ(take_blocks(cls, stacked, 32), 32u);
    give_blocks(cls, stacked, 32);
    std::vector<void*> held;
    std::uint32_t limit = kInitialLimit;
    for (const std::uint32_t next_limit : {4u, 8u, 16u, 32u, 32u}) {
      const std::uint64_t outside = outside_central(cls);
      held.push_back(allocate(kSize));  // the bin is empty
      const std::uint32_t refill = limit / 2;
      EXPECT_EQ(outside_central(cls), outside + refill) << "limit " << limit;
      EXPECT_EQ(bin_of(kSize).count(), refill - 1) << "limit " << limit;
      EXPECT_EQ(bin_of(kSize).limit(), next_limit) << "limit " << limit;
      while (bin_of(kSize).count() != 0) held.push_back(allocate(kSize));
      EXPECT_EQ(outside_central(cls), outside + refill) << "the bin served the rest";
      limit = next_limit;
    }
    EXPECT_EQ(held.size(), 1u + 2 + 4 + 8 + 16);
    for (void* block : held) deallocate(block);
  });
}

// A refill touches one page first at most (the marks of never-used blocks it carves;
// central_lists_test checks that a take keeps to its limit).
TEST(ThreadCache, ARefillTouchesAtMostOnePageFirst) {
  EXPECT_EQ(kFirstTouchesPerRefill, 1u);
}

// When decay or malloc_trim moves the flush epoch on, a thread empties its bins into the spans
// at its next slow paths, whole bins in class order, stopping once 512 blocks went (at least a
// bin): three bins of 300 to 512 blocks go at two slow paths, not one.
TEST(ThreadCache, AFlushEpochEmptiesTheBinsAFewAtEachSlowPath) {
  on_a_new_thread([] {
    constexpr std::size_t kSizes[] = {16, 32, 48};
    std::vector<void*> held;
    for (const std::size_t size : kSizes) {
      for (int i = 0; i < 300; ++i) held.push_back(allocate(size));
    }
    for (void* block : held) deallocate(block);
    std::uint32_t counts[3];
    for (int i = 0; i < 3; ++i) {
      counts[i] = bin_of(kSizes[i]).count();
      ASSERT_GE(counts[i], 300u) << kSizes[i];
    }
    request_cache_flush();
    void* a = allocate(4096);  // a slow path: its bin is empty
    EXPECT_EQ(bin_of(16).count(), 0u);
    EXPECT_EQ(bin_of(32).count(), counts[0] < 512 ? 0u : counts[1]);
    EXPECT_EQ(bin_of(48).count(), counts[2]) << "at least 600 blocks were in the first two";
    void* b = allocate(8192);  // the next slow path
    EXPECT_EQ(bin_of(32).count(), 0u);
    EXPECT_EQ(bin_of(48).count(), counts[0] + counts[1] < 1024 ? 0u : counts[2]);
    deallocate(a);
    deallocate(b);
  });
}

// The program holds 64 blocks that did not pass through this thread's cache and frees them: the
// bin grows at 2, 4, 8 and 16 blocks, and at 32, its capacity, gives its older 16 away.
TEST(ThreadCache, AFullBinGrowsBelowItsCapacityAndGivesItsOlderHalfAwayAtIt) {
  on_a_new_thread([] {
    const unsigned cls = class_of(kSize);
    deallocate(allocate(64));  // the thread's cache, its bin of kSize empty at its first limit
    ASSERT_EQ(bin_of(kSize).limit(), kInitialLimit);
    std::vector<void*> held(64);
    ASSERT_EQ(take_blocks(cls, held.data(), 64), 64u);
    for (void* block : held) clear_mark(block);  // handed out, as a refill does
    int grew = 0;
    int gave = 0;
    for (void* block : held) {
      const std::uint32_t count = bin_of(kSize).count();
      const std::uint32_t limit = bin_of(kSize).limit();
      const std::uint64_t outside = outside_central(cls);
      const std::vector<void*> older(bin_of(kSize).bottom_slot(),
                                     bin_of(kSize).bottom_slot() + count / 2);
      deallocate(block);
      if (count < limit) {
        EXPECT_EQ(bin_of(kSize).count(), count + 1);
        EXPECT_EQ(outside_central(cls), outside);
      } else if (limit < kCapacity) {
        ++grew;
        EXPECT_EQ(bin_of(kSize).limit(), 2 * limit);
        EXPECT_EQ(bin_of(kSize).count(), count + 1);
        EXPECT_EQ(outside_central(cls), outside);
      } else {
        ++gave;
        EXPECT_EQ(bin_of(kSize).count(), count / 2 + 1);
        EXPECT_EQ(outside_central(cls), outside - count / 2);
        // The central stack's top holds what the bin gave: its older half, in order.
        std::vector<void*> given(count / 2);
        ASSERT_EQ(take_blocks(cls, given.data(), count / 2), count / 2);
        EXPECT_EQ(given, older);
        give_blocks(cls, given.data(), count / 2);
      }
    }
    EXPECT_EQ(grew, 4);
    EXPECT_EQ(gave, 2);
    EXPECT_EQ(bin_of(kSize).count(), kCapacity);
  });
}

// A bin lives in its first slots, which all classes' bins share a few pages of, while its limit
// is at most twice its initial one (its limit after its first refill), and moves to its slots,
// its blocks with it in their order, as the limit passes that. Decay's reset of the limit brings
// it back.
TEST(ThreadCache, ABinLivesInItsFirstSlotsUntilItsLimitOutgrowsThemAndMovesWithItsBlocks) {
  static_assert(first_room(class_of_medium(kSize)) == 4);
  on_a_new_thread([] {
    const unsigned cls = class_of(kSize);
    deallocate(allocate(64));  // the thread's cache, its bin of kSize empty at its first limit
    TagBins* const tag_bins = CacheBins::tag_bins(*t_cache, 0);
    void** const first = tag_bins->first_slots + kFirstSlotOffsets[cls];
    void** const slots = tag_bins->slots + kSlotOffsets[cls];
    ASSERT_EQ(bin_of(kSize).bottom_slot(), first);
    ASSERT_EQ(CacheBins::home(*t_cache, cls), first);
    std::vector<void*> held(5);
    ASSERT_EQ(take_blocks(cls, held.data(), 5), 5u);
    for (void* block : held) clear_mark(block);  // handed out, as a refill does
    const std::uint32_t limits[] = {2, 2, 4, 4, 8};
    for (std::size_t i = 0; i < held.size(); ++i) {
      deallocate(held[i]);
      EXPECT_EQ(bin_of(kSize).limit(), limits[i]) << i;
      void** const home = limits[i] <= 4 ? first : slots;
      EXPECT_EQ(bin_of(kSize).bottom_slot(), home) << i;
      EXPECT_EQ(CacheBins::home(*t_cache, cls), home) << i;
      EXPECT_EQ(std::vector<void*>(bin_of(kSize).bottom_slot(), bin_of(kSize).top_slot()),
                std::vector<void*>(held.begin(), held.begin() + static_cast<long>(i) + 1))
          << i;
    }
    request_cache_flush();
    void* other = allocate(8192);  // a slow path, which empties the bins into the spans
    EXPECT_EQ(bin_of(kSize).count(), 0u);
    EXPECT_EQ(bin_of(kSize).limit(), kInitialLimit);
    EXPECT_EQ(bin_of(kSize).bottom_slot(), first);
    deallocate(other);
  });
}

// free's fast path compares the lower half of a block's second word with its mark's (the marks
// of the three places a free block waits differ in the upper half only); a live block that
// matches there alone takes the slow path, which frees it as any other.
TEST(ThreadCache, ALiveBlockWhoseSecondWordMatchesHalfOfAMarkFreesFine) {
  on_a_new_thread([] {
    void* block = allocate(kSize);
    words_of(block)[1] = mark_of(block) ^ (std::uintptr_t{1} << 40);
    deallocate(block);
    EXPECT_TRUE(carries_mark(block, Waits::kFree));
    EXPECT_EQ(allocate(kSize), block);
    deallocate(block);
  });
}

TEST(ThreadCache, FlushThreadCacheEmptiesEveryBinIntoTheCentralLists) {
  on_a_new_thread([] {
    constexpr std::size_t kSizes[] = {64, kSize, 8192};
    for (const std::size_t size : kSizes) {
      std::vector<void*> held(10);
      for (void*& block : held) block = allocate(size);
      for (void* block : held) deallocate(block);
    }
    std::uint32_t cached[3];
    std::uint64_t outside[3];
    ClassUsage usage[3];
    for (int i = 0; i < 3; ++i) {
      cached[i] = bin_of(kSizes[i]).count();
      ASSERT_NE(cached[i], 0u) << kSizes[i];
      outside[i] = outside_central(class_of(kSizes[i]));
      usage[i] = class_usage(class_of(kSizes[i]));
    }
    flush_thread_cache();
    for (int i = 0; i < 3; ++i) {
      const unsigned cls = class_of(kSizes[i]);
      EXPECT_EQ(bin_of(kSizes[i]).count(), 0u) << kSizes[i];
      EXPECT_EQ(outside_central(cls), outside[i] - cached[i]) << kSizes[i];
      EXPECT_EQ(class_usage(cls).cached, usage[i].cached - cached[i]) << kSizes[i];
      EXPECT_EQ(class_usage(cls).requests, usage[i].requests) << kSizes[i];
    }
  });
}

TEST(ThreadCache, ClassUsageCountsEachAllocationOnceAndEachCachedBlock) {
  const unsigned cls = class_of(64);
  const ClassUsage before = class_usage(cls);
  on_a_new_thread([&] {
    std::vector<void*> held(100);
    for (void*& block : held) block = allocate(64);  // refills and pops alike
    EXPECT_EQ(class_usage(cls).requests, before.requests + 100);
    EXPECT_EQ(class_usage(cls).cached, before.cached + bin_of(64).count());
    for (void* block : held) deallocate(block);
    EXPECT_EQ(class_usage(cls).requests, before.requests + 100);
    EXPECT_EQ(class_usage(cls).cached, before.cached + bin_of(64).count());
  });
  // The exited thread's requests stay counted; its cached blocks went to the central lists.
  EXPECT_EQ(class_usage(cls).requests, before.requests + 100);
  EXPECT_EQ(class_usage(cls).cached, before.cached);
}

// Statistics read a running thread's counts while it allocates: never a torn or lost count,
// and under ThreadSanitizer no data race (the counters were plain integers once). Once the
// owner has stopped, the count is exact.
TEST(ThreadCache, ClassUsageReadsTheCountsOfThreadsThatAllocateMeanwhile) {
  const unsigned cls = class_of(64);
  const std::uint64_t before = class_usage(cls).requests;
  constexpr int kPairs = 200000;
  std::atomic<bool> started{false};
  std::thread owner([&] {
    for (int i = 0; i < kPairs; ++i) {
      deallocate(allocate(64));
      if (i == 0) started.store(true, std::memory_order_release);
    }
  });
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  std::uint64_t last = before;
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t now = class_usage(cls).requests;
    EXPECT_GE(now, last) << "a count went backwards";
    EXPECT_LE(now, before + kPairs);
    last = now;
  }
  owner.join();
  EXPECT_EQ(class_usage(cls).requests, before + kPairs);
}

TEST(ThreadCache, AnExitingThreadGivesItsCachedBlocksToTheCentralLists) {
  const unsigned cls = class_of(kSize);
  const std::uint64_t outside = outside_central(cls);
  std::uint32_t cached = 0;
  on_a_new_thread([&] {
    std::vector<void*> held(10);
    for (void*& block : held) block = allocate(kSize);
    for (void* block : held) deallocate(block);
    cached = bin_of(kSize).count();
    EXPECT_EQ(outside_central(cls), outside + cached);
  });
  EXPECT_NE(cached, 0u);
  EXPECT_EQ(outside_central(cls), outside);
}

// A thread that fills a bin of `kSize` blocks and waits, its cache idle, until the test lets it
// go on; then it allocates once more, which finds whatever the test left in its bin.
class ParkedThread {
 public:
  ParkedThread()
      : thread_([this] {
          std::vector<void*> held(20);
          for (void*& block : held) block = allocate(kSize);
          for (void* block : held) deallocate(block);
          cached_ = bin_of(kSize).count();
          step_.set(kParked);
          step_.wait_for(kGoOn);
          // A bin that was reclaimed from moves back to its home at its owner's next slow path.
          void* block = allocate(kSize);
          EXPECT_NE(block, nullptr);
          EXPECT_EQ(bin_of(kSize).bottom_slot(), CacheBins::home(*t_cache, class_of(kSize)));
          deallocate(block);
        }) {
    step_.wait_for(kParked);
  }
  ~ParkedThread() {
    step_.set(kGoOn);
    thread_.join();
  }
  ParkedThread(const ParkedThread&) = delete;
  ParkedThread& operator=(const ParkedThread&) = delete;

  // Blocks in the bin when it parked.
  [[nodiscard]] std::uint32_t cached() const { return cached_; }

 private:
  static constexpr int kParked = 1;
  static constexpr int kGoOn = 2;
  poolalloc_test::Step step_;
  std::uint32_t cached_ = 0;
  std::thread thread_;
};

TEST(ThreadCache, ReclaimTakesTheBlocksOfAnotherThreadsBinsIntoTheSpans) {
  const unsigned cls = class_of(kSize);
  const ParkedThread parked;
  ASSERT_NE(parked.cached(), 0u);
  const ClassUsage usage = class_usage(cls);
  const ClassCounters counters = class_counters(cls);
  reclaim_caches(Reclaim::kAll);
  const std::uint32_t taken = caches_can_be_reclaimed() ? parked.cached() : 0;
  EXPECT_EQ(class_usage(cls).cached, usage.cached - taken);
  EXPECT_EQ(class_counters(cls).blocks_out, counters.blocks_out - taken);
  EXPECT_EQ(class_counters(cls).stacked, counters.stacked) << "into the spans, past the stack";
}

TEST(ThreadCache, AnIdleReclaimTakesOnlyFromCachesThatRanNoSlowPathSinceTheLastFlushRequest) {
  const unsigned cls = class_of(kSize);
  const ParkedThread parked;
  ASSERT_NE(parked.cached(), 0u);
  const std::uint64_t cached = class_usage(cls).cached;
  reclaim_caches(Reclaim::kIdle);
  EXPECT_EQ(class_usage(cls).cached, cached) << "the cache ran its slow paths this period";
  request_cache_flush();
  reclaim_caches(Reclaim::kIdle);
  const std::uint32_t taken = caches_can_be_reclaimed() ? parked.cached() : 0;
  EXPECT_EQ(class_usage(cls).cached, cached - taken);
}

}  // namespace
