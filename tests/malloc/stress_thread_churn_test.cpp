// 10,000 short-lived threads, each allocating and freeing across many size classes, run a few
// at a time. A thread's cache must go back when it exits: if it did not, the resident set
// would grow with every thread, and so would the number of thread caches.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

constexpr int kThreads = 10000;
constexpr int kWave = 8;

std::atomic<int> g_damaged{0};

// Touches 24 size classes plus a system-sized block, keeps some blocks until the end so
// that the thread exits with a warm cache.
void* short_lived(void* arg) {
  const auto id = reinterpret_cast<uintptr_t>(arg);
  void* kept[24];
  for (size_t i = 0; i < 24; ++i) {
    const size_t size = 16 + i * 48 + id % 16;
    void* scratch = malloc(size);
    fill(scratch, size, id);
    kept[i] = malloc(size);
    fill(kept[i], size, id + i);
    if (!matches(scratch, size, id)) g_damaged.fetch_add(1);
    free(scratch);
  }
  void* large = malloc(40000);
  fill(large, 64, id);
  free(large);
  for (size_t i = 0; i < 24; ++i) {
    if (!matches(kept[i], 16 + i * 48 + id % 16, id + i)) g_damaged.fetch_add(1);
    free(kept[i]);
  }
  return nullptr;
}

void run_wave(uintptr_t first) {
  pthread_t threads[kWave];
  for (int i = 0; i < kWave; ++i) {
    ASSERT_EQ(pthread_create(&threads[i], nullptr, short_lived,
                             reinterpret_cast<void*>(first + static_cast<uintptr_t>(i))),
              0);
  }
  for (pthread_t t : threads) ASSERT_EQ(pthread_join(t, nullptr), 0);
}

TEST(ThreadChurn, TenThousandShortLivedThreadsKeepMemoryBounded) {
  ASSERT_NO_FATAL_FAILURE(run_wave(0));  // warm up: the thread stacks, the first spans
  poolalloc_stats before{};
  poolalloc_get_stats(&before);
  const size_t rss_before = resident_bytes();
  for (int first = kWave; first < kThreads; first += kWave) {
    ASSERT_NO_FATAL_FAILURE(run_wave(static_cast<uintptr_t>(first)));
  }
  const size_t rss_after = resident_bytes();
  poolalloc_stats after{};
  poolalloc_get_stats(&after);
  EXPECT_EQ(g_damaged.load(), 0);
  EXPECT_LT(rss_after, rss_before + 64 * kMiB)
      << "RSS grew from " << rss_before / kMiB << " to " << rss_after / kMiB << " MiB";
  // Caches of exited threads are released or reused, not accumulated per thread.
  EXPECT_LE(after.thread_caches, before.thread_caches + 2 * kWave);
}

}  // namespace
}  // namespace malloc_test
