// What a program keeps when it makes no call after its peak, at the default options and with
// POOLALLOC_DECAY_THREAD=0 (tuning.md). The helper (bench/workloads/rss_over_time.cpp) frees a
// burst of 64 MiB of 64-byte blocks in random order, then makes no call:
// - in a program that runs threads of its own (--threads=2) the decay thread gives the memory
//   back at the default, and with the option off nothing does ("memory then goes back only while
//   the program calls the allocator past its caches, and not at all while it makes no call");
// - a single-threaded program never has the thread: it keeps what its last call left, after a
//   burst of 64-byte blocks no more than glibc keeps after the same frees plus the retained
//   empty spans, 8 MiB (tuning.md). (After 2 KiB blocks, which glibc coalesces and trims at
//   once, it keeps far more: testing.md lists that promise as broken.)
#include <stdio.h>

#include <string>

#include <gtest/gtest.h>

namespace {

struct Samples {
  double peak = -1, two_periods = -1;
};

// `preload` empty runs the helper on glibc alone; the burst is of blocks of `block` bytes.
Samples run_burst_then_no_call(const std::string& environment, const std::string& preload,
                               int threads, int block = 64) {
  const std::string command =
      "env " + environment + (preload.empty() ? "" : " LD_PRELOAD=") + preload +
      " " RSS_OVER_TIME_HELPER " --pattern=burst --mib=64 --after=none --samples=3 --threads=" +
      std::to_string(threads) + " --block=" + std::to_string(block);
  Samples samples;
  double half_period = 0, period = 0;
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) return samples;
  if (fscanf(output, "%lf %lf %lf %lf", &samples.peak, &half_period, &period,
             &samples.two_periods) != 4)
    samples = {};
  pclose(output);
  return samples;
}

// Both runs succeeded; prints them.
void expect_ran(const std::string& first_name, const Samples& first, const char* second_name,
                const Samples& second) {
  ASSERT_GT(first.peak, 0) << "the helper failed";
  ASSERT_GT(second.peak, 0) << "the helper failed";
  std::printf("RSS in MiB after 64 MiB freed, then two periods later: %s %.1f %.1f, %s %.1f %.1f\n",
              first_name.c_str(), first.peak, first.two_periods, second_name, second.peak,
              second.two_periods);
}

TEST(DecayThreadOption, OffLeavesTheMemoryOfAProgramThatRunsThreadsAndMakesNoCall) {
  const Samples off = run_burst_then_no_call("POOLALLOC_DECAY_THREAD=0", POOLALLOC_LIBRARY, 2);
  const Samples on = run_burst_then_no_call("", POOLALLOC_LIBRARY, 2);
  expect_ran("thread off", off, "at the default", on);
  EXPECT_GT(off.two_periods, off.peak * 0.9);
  EXPECT_LT(on.two_periods, on.peak * 0.25);
}

// The retained empty spans, in MiB (tuning.md).
constexpr double kRetainedMiB = 8;

void expect_no_more_than_on_glibc(int block) {
  const Samples glibc = run_burst_then_no_call("", "", 1, block);
  const Samples pools = run_burst_then_no_call("", POOLALLOC_LIBRARY, 1, block);
  expect_ran("glibc (" + std::to_string(block) + "-byte blocks)", glibc, "poolalloc", pools);
  EXPECT_LE(pools.two_periods, glibc.two_periods + kRetainedMiB);
}

TEST(NoCallAfterAPeak, ASingleThreadedProgramKeepsNoMoreThanOnGlibc) {
  expect_no_more_than_on_glibc(64);
}

}  // namespace
