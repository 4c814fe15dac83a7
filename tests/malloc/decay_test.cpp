// The option POOLALLOC_DECAY_MS (set to 100 for these tests): with a short period, the resident
// set follows the live set within a few of them, after a burst freed in random order while the
// program goes on with a small live set, and after threads that allocated a mix of sizes went
// idle. What users are promised at the default period is proven by rss_after_peak_test and
// thread_pool_rss_test.
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "rss_workloads.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(20);

// The small work a program goes on with: `count` blocks of 64 B allocated, written and freed,
// then a pause of a millisecond (the program's pace, not a synchronisation).
void small_work(size_t count) {
  void* blocks[1000];
  for (size_t i = 0; i < count; ++i) {
    blocks[i] = malloc(opaque(size_t{64}));
    if (blocks[i] != nullptr) static_cast<uintptr_t*>(blocks[i])[0] = i;
  }
  for (size_t i = 0; i < count; ++i) free(blocks[i]);
  const timespec pause{0, 1000000};
  nanosleep(&pause, nullptr);
}

// Does small_work until the resident set falls under `bound` or the deadline passes; returns
// the resident set at the end and sets `took` to the time it took.
size_t work_until_rss_below(size_t bound, double& took) {
  const auto start = Clock::now();
  size_t rss = resident_bytes();
  while (rss >= bound && Clock::now() - start < kDeadline) {
    small_work(1000);
    rss = resident_bytes();
  }
  took = std::chrono::duration<double>(Clock::now() - start).count();
  return rss;
}

// Allocates `bytes` of 64-byte blocks, writes each, and frees them in random order; returns the
// resident set at the peak. The array of pointers is unmapped before it returns.
size_t burst_freed_in_random_order(size_t bytes, uint64_t seed) {
  const size_t count = bytes / 64;
  PointerArray blocks(count);
  EXPECT_NE(blocks.data(), nullptr);
  if (blocks.data() == nullptr) return 0;
  for (size_t i = 0; i < count; ++i) {
    blocks[i] = malloc(opaque(size_t{64}));
    if (blocks[i] == nullptr) {
      ADD_FAILURE() << "malloc failed";
      return 0;
    }
    static_cast<uintptr_t*>(blocks[i])[0] = i;
  }
  const size_t peak = resident_bytes();
  std::mt19937_64 rng(seed);
  for (size_t i = count; i > 1; --i) std::swap(blocks[i - 1], blocks[rng() % i]);
  for (size_t i = 0; i < count; ++i) free(blocks[i]);
  return peak;
}

TEST(DecayMsOption, ShortPeriodTakesRandomOrderFreesToTheLiveSet) {
  constexpr size_t kBurst = size_t{128} << 20;
  const uint64_t seed = poolalloc_test::test_seed(4);
  const size_t before = resident_bytes();
  const size_t peak = burst_freed_in_random_order(kBurst, seed);
  const size_t freed = resident_bytes();
  ASSERT_GT(peak, before + kBurst / 2) << "the blocks were not touched; the test measures nothing";
  double took = 0;
  const size_t after = work_until_rss_below(before + 16 * kMiB, took);
  std::printf(
      "RSS %zu MiB before, %zu MiB at the peak, %zu MiB once freed, %zu MiB after %.1f s "
      "of small work\n",
      before / kMiB, peak / kMiB, freed / kMiB, after / kMiB, took);
  EXPECT_LT(after, before + 16 * kMiB);
}

TEST(DecayMsOption, ShortPeriodTakesIdleThreadsCachesBack) {
  const uint64_t seed = poolalloc_test::test_seed(8);
  const size_t before = resident_bytes();
  size_t idle = 0, after = 0;
  double took = 0;
  // Decay reclaims the idle threads' caches as malloc_trim(0) does in trim_idle_threads_test,
  // run by the decay thread. Before it could reach other threads' caches,
  // it stopped at 80 MiB: the idle threads kept their last round.
  constexpr size_t kBound = 16 * kMiB;
  const size_t last_round = run_idle_workers(64, 4, 256, seed, [&](size_t) {
    idle = resident_bytes();
    after = work_until_rss_below(before + kBound, took);
  });
  std::printf(
      "RSS %zu MiB before the threads, %zu MiB when they went idle, %zu MiB after %.1f s "
      "of small work in the main thread (their last round: %zu MiB)\n",
      before / kMiB, idle / kMiB, after / kMiB, took, last_round / kMiB);
  EXPECT_LT(after, before + kBound);
}

}  // namespace
}  // namespace malloc_test
