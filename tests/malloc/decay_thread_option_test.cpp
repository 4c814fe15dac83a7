// POOLALLOC_DECAY_THREAD=0, for programs that must stay single-threaded: no decay thread, so a
// program that makes no call after its peak keeps the freed memory (tuning.md: "memory then goes
// back only while the program calls the allocator past its caches, and not at all while it makes
// no call"); the same run at the default gives it back. The helper
// (bench/workloads/rss_over_time.cpp) frees a burst of 64 MiB in random order, then makes no call.
#include <stdio.h>

#include <string>

#include <gtest/gtest.h>

namespace {

struct Samples {
  double peak = -1, two_periods = -1;
};

Samples run_burst_then_no_call(const std::string& environment) {
  const std::string command = "env " + environment +
                              " LD_PRELOAD=" POOLALLOC_LIBRARY " " RSS_OVER_TIME_HELPER
                              " --pattern=burst --mib=64 --after=none "
                              "--samples=3";
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

TEST(DecayThreadOption, OffLeavesTheMemoryOfAProgramThatMakesNoCall) {
  const Samples off = run_burst_then_no_call("POOLALLOC_DECAY_THREAD=0");
  const Samples on = run_burst_then_no_call("");
  ASSERT_GT(off.peak, 0) << "the helper failed";
  ASSERT_GT(on.peak, 0) << "the helper failed";
  std::printf(
      "RSS in MiB after 64 MiB freed, then two periods later: thread off %.1f %.1f, "
      "at the default %.1f %.1f\n",
      off.peak, off.two_periods, on.peak, on.two_periods);
  EXPECT_GT(off.two_periods, off.peak * 0.9);
  EXPECT_LT(on.two_periods, on.peak * 0.25);
}

}  // namespace
