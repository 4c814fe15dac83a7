// A thread pool at the default options: --workers threads each run one job in turn (about
// 800 KiB of blocks of 16 B to 8 KiB allocated, then all freed; or a small job, 50 blocks of
// 16 B to 4 KiB) and then wait on a condition variable, while the main thread makes no call. Within
// one decay period of the last job, the resident set is at most twice glibc's on the same pattern,
// measured in the same test: the helper (bench/workloads/rss_over_time.cpp) runs once with the
// library preloaded and once on glibc alone.
//
// Before: the idle workers' caches kept their blocks (poolalloc 265 MiB at 256 workers, glibc
// 21 MiB), as no step ran while no thread called, and a cache counted as idle only once a step
// had moved the flush epoch since it was made. Small jobs kept 3.3 times glibc's at 64 workers
// (13.4 MiB against 4.1): their pools stayed under the decay thread's start threshold, 17 MiB of
// spans, and nothing decayed; the thread now starts once a second thread has a cache.
#include <stdio.h>

#include <string>

#include <gtest/gtest.h>

namespace {

struct Samples {
  double peak = -1, half_period = -1, period = -1;
};

Samples run_pool(const std::string& preload, int workers, const char* job) {
  const std::string command = "env -u LD_PRELOAD " + preload +
                              " " RSS_OVER_TIME_HELPER " --pattern=pool --samples=2 --job=" + job +
                              " --workers=" + std::to_string(workers);
  Samples samples;
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) return samples;
  if (fscanf(output, "%lf %lf %lf", &samples.peak, &samples.half_period, &samples.period) != 3)
    samples = {};
  pclose(output);
  return samples;
}

void expect_at_most_twice_glibc(int workers, const char* job = "large") {
  const Samples glibc = run_pool("", workers, job);
  const Samples pools = run_pool("LD_PRELOAD=" POOLALLOC_LIBRARY, workers, job);
  ASSERT_GT(glibc.period, 0) << "the helper failed on glibc";
  ASSERT_GT(pools.period, 0) << "the helper failed with the library preloaded";
  std::printf(
      "%d workers, %s jobs: RSS in MiB when the last job ended, half a period and a period later: "
      "glibc %.1f %.1f %.1f, poolalloc %.1f %.1f %.1f\n",
      workers, job, glibc.peak, glibc.half_period, glibc.period, pools.peak, pools.half_period,
      pools.period);
  EXPECT_LE(pools.period, 2 * glibc.period + workers * 68.0 / 1024);
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith64Workers) {
  expect_at_most_twice_glibc(64);
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith256Workers) {
  expect_at_most_twice_glibc(256);
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith1000Workers) {
  expect_at_most_twice_glibc(1000);
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith16SmallWorkers) {
  expect_at_most_twice_glibc(16, "small");
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith64SmallWorkers) {
  expect_at_most_twice_glibc(64, "small");
}

TEST(ThreadPoolRss, WithinAPeriodOfGoingIdleAtMostTwiceGlibcWith256SmallWorkers) {
  expect_at_most_twice_glibc(256, "small");
}

}  // namespace
