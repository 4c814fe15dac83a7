// malloc_trim(0) reaches the caches of other threads: 64 threads that allocated and freed a mix
// of sizes sit idle on a barrier with nothing live, and malloc_trim(0) from the main thread takes
// the blocks of their bins back into the spans. Run with decay off (POOLALLOC_DECAY_MS=3600000),
// so that what is measured is malloc_trim alone.
//
// The bound: what is left is the threads' caches themselves and their touched slot pages (a
// few MiB in all). glibc ends at 4 MiB here. When only the owners could empty their bins, the
// idle threads kept their last round: 80 MiB; the first edition kept 189 MiB.
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"
#include "rss_workloads.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kThreads = 64;

TEST(TrimIdleThreads, ReachesOtherThreadsCaches) {
  const uint64_t seed = poolalloc_test::test_seed(8);
  const size_t before = resident_bytes();
  size_t after = 0;
  size_t idle = 0;
  const size_t last_round = run_idle_workers(kThreads, 4, 256, seed, [&](size_t) {
    idle = resident_bytes();
    malloc_trim(0);
    after = resident_bytes();
  });
  std::printf(
      "RSS %zu MiB before the threads, %zu MiB once idle, %zu MiB after malloc_trim(0) "
      "with %u idle threads (their last round: %zu MiB)\n",
      before / kMiB, idle / kMiB, after / kMiB, kThreads, last_round / kMiB);
  EXPECT_LT(after, before + 12 * kMiB);
}

// A thread's cache keeps its bins' slots (arrays of pointers, up to a batch per class) in pages
// of its own; the cache is recycled when the thread exits, and the slots' pages go back to the
// OS then. 256 threads alive at once, each of which filled the bins of 24 classes, would
// otherwise leave 256 caches' worth of touched slots behind them: 15 MiB more than before the
// threads, against about 5 MiB with the slots given back (the rest: the thread stacks glibc
// keeps for reuse, and the caches themselves). glibc leaves 11 MiB, mimalloc 28 MiB.
TEST(TrimIdleThreads, ExitedThreadsLeaveNoCacheSlotsResident) {
  constexpr unsigned kThreads = 256;
  malloc_trim(0);
  const size_t before = resident_bytes();
  pthread_barrier_t all_filled;
  pthread_barrier_init(&all_filled, nullptr, kThreads);
  std::vector<pthread_t> threads(kThreads);
  for (pthread_t& thread : threads) {
    ASSERT_EQ(pthread_create(
                  &thread, nullptr,
                  [](void* barrier) -> void* {
                    void* blocks[512];
                    for (size_t size = 16; size <= 384; size += 16) {
                      for (void*& block : blocks) block = malloc(opaque(size));
                      for (void* block : blocks) free(block);
                    }
                    pthread_barrier_wait(static_cast<pthread_barrier_t*>(barrier));
                    return nullptr;
                  },
                  &all_filled),
              0);
  }
  for (pthread_t thread : threads) ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_barrier_destroy(&all_filled);
  malloc_trim(0);
  const size_t after = resident_bytes();
  std::printf("RSS %zu KiB before %u threads, %zu KiB after they exited and malloc_trim(0)\n",
              before >> 10, kThreads, after >> 10);
  EXPECT_LT(after, before + 8 * kMiB);
}

}  // namespace
}  // namespace malloc_test

// A thread whose first allocation comes in the last round of pthread key destructors (a
// library's destructor re-arms its key three times, then allocates) registers the exit flush
// too late: glibc calls the key's destructor no more. malloc_trim(0) (and decay) find its cache
// once the thread is gone and take it back. Before, each such thread kept its whole cache and
// the cache stayed on the live list: 500 threads held 500 caches.
pthread_key_t g_late_key;
thread_local int t_late_rounds = 0;

void allocate_in_last_destructor_round(void* value) {
  if (++t_late_rounds < PTHREAD_DESTRUCTOR_ITERATIONS) {
    pthread_setspecific(g_late_key, value);
    return;
  }
  for (size_t i = 0; i < 200; ++i) {
    void* p = malloc(64 + i * 16);
    memset(p, 1, 64);
    free(p);
  }
}

TEST(TrimIdleThreads, ReapsCachesOfThreadsThatAllocatedInTheirLastDestructorRound) {
  ASSERT_EQ(pthread_key_create(&g_late_key, allocate_in_last_destructor_round), 0);
  constexpr unsigned kLateThreads = 500;
  for (unsigned i = 0; i < kLateThreads; ++i) {
    pthread_t thread;
    ASSERT_EQ(pthread_create(
                  &thread, nullptr,
                  [](void*) -> void* {
                    pthread_setspecific(g_late_key, reinterpret_cast<void*>(1));
                    return nullptr;
                  },
                  nullptr),
              0);
    ASSERT_EQ(pthread_join(thread, nullptr), 0);
  }
  malloc_trim(0);
  poolalloc_stats stats{};
  ASSERT_EQ(poolalloc_get_stats(&stats), 0);
  // This thread's cache, and at most the last thread's if the kernel had not let its task go yet.
  EXPECT_LE(stats.thread_caches, 2u);
  pthread_key_delete(g_late_key);
}
