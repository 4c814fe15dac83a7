// A preloaded poolalloc at its default options changes nothing that a program can see about
// itself (docs/malloc.md, "What a program can see"). invisibility_probe makes a peak past the
// one that starts the decay thread and prints what it sees of itself (self_view.hpp); each test
// runs it on glibc and with libpoolalloc.so preloaded, at once, and compares the facts that its
// promise is about.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "probe_runs.hpp"
#include "self_view.hpp"

namespace malloc_test {
namespace {

struct Runs {
  ProbeRun glibc, preloaded;
};

// Both runs of every mode, all at once.
std::map<std::string, Runs> run_modes(const std::vector<std::string>& modes,
                                      bool on_one_cpu = false) {
  std::vector<ProbeRun> all;
  for (const std::string& mode : modes) {
    all.push_back({{INVISIBILITY_PROBE, mode}, "", -1, "", "", on_one_cpu});
    all.push_back({{INVISIBILITY_PROBE, mode}, POOLALLOC_LIBRARY, -1, "", "", on_one_cpu});
  }
  run_all(all);
  std::map<std::string, Runs> runs;
  for (size_t i = 0; i < modes.size(); ++i) runs[modes[i]] = {all[2 * i], all[2 * i + 1]};
  return runs;
}

// The facts that concern the threads: their count, the helper's attributes, and unshare, which
// only a single-threaded process may call. Each has its test; the others are compared together.
const std::set<std::string> kThreadFacts = {
    "threads", "tasks", "child-threads", "child-tasks", "foreign-thread", "unshare(CLONE_NEWUSER)"};

std::string fact_of(const std::string& line) {
  return line.substr(0, line.find(' '));
}

// The lines of `text` whose fact is one of `facts` (or, with `others`, none of them).
std::vector<std::string> lines_of(const std::string& text, const std::set<std::string>& facts,
                                  bool others = false) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if ((facts.count(fact_of(line)) != 0) != others) lines.push_back(line);
  }
  return lines;
}

// The lines that only one run printed, each named; the same lines in another order are a
// difference too.
::testing::AssertionResult SameLines(std::vector<std::string> glibc,
                                     std::vector<std::string> preloaded) {
  if (glibc == preloaded) return ::testing::AssertionSuccess();
  ::testing::AssertionResult result = ::testing::AssertionFailure();
  const std::vector<std::string> in_order_glibc = glibc, in_order_preloaded = preloaded;
  std::sort(glibc.begin(), glibc.end());
  std::sort(preloaded.begin(), preloaded.end());
  std::vector<std::string> only_glibc, only_preloaded;
  std::set_difference(glibc.begin(), glibc.end(), preloaded.begin(), preloaded.end(),
                      std::back_inserter(only_glibc));
  std::set_difference(preloaded.begin(), preloaded.end(), glibc.begin(), glibc.end(),
                      std::back_inserter(only_preloaded));
  for (const std::string& line : only_glibc) result << "\n  on glibc only:        " << line;
  for (const std::string& line : only_preloaded) result << "\n  with poolalloc only:  " << line;
  if (only_glibc.empty() && only_preloaded.empty()) {
    result << "\n  the same lines in another order:";
    for (size_t i = 0; i < in_order_glibc.size(); ++i) {
      if (in_order_glibc[i] != in_order_preloaded[i])
        result << "\n  line " << i + 1 << ": glibc " << in_order_glibc[i] << ", with poolalloc "
               << in_order_preloaded[i];
    }
  }
  return result;
}

::testing::AssertionResult RanCleanly(const Runs& runs) {
  if (runs.glibc.status != 0 || runs.preloaded.status != 0)
    return ::testing::AssertionFailure()
           << "the probe exited with " << runs.glibc.status << " on glibc, "
           << runs.preloaded.status << " with poolalloc; stderr:\n"
           << runs.glibc.err << runs.preloaded.err;
  return ::testing::AssertionSuccess();
}

// The thread-count facts of both runs of `mode`, which on glibc are all "1".
void ExpectNoThreadOfOurs(const std::string& mode) {
  const Runs runs = run_modes({mode}).at(mode);
  ASSERT_TRUE(RanCleanly(runs));
  const std::set<std::string> counts = {"threads", "tasks", "child-threads", "child-tasks"};
  const std::vector<std::string> glibc = lines_of(runs.glibc.out, counts);
  ASSERT_FALSE(glibc.empty()) << runs.glibc.out;
  for (const std::string& line : glibc) ASSERT_EQ(line.substr(line.find(' ')), " 1");
  EXPECT_TRUE(SameLines(glibc, lines_of(runs.preloaded.out, counts)));
}

// Every thread of the preloaded run that is not the program's is a helper that the program
// cannot tell from none. The scenarios run threads of their own that allocate and a peak past
// the decay thread's start, so the helper runs: without it there would be nothing to check.
void ExpectInvisibleHelpers(const Runs& runs) {
  EXPECT_TRUE(lines_of(runs.glibc.out, {"foreign-thread"}).empty()) << runs.glibc.out;
  const std::vector<std::string> helpers = lines_of(runs.preloaded.out, {"foreign-thread"});
  for (const std::string& line : helpers) EXPECT_EQ(line, self_view::kInvisibleHelper);
  EXPECT_FALSE(helpers.empty()) << "no thread of ours was running: nothing was checked";
  EXPECT_TRUE(SameLines(lines_of(runs.glibc.out, {"own-tasks"}),
                        lines_of(runs.preloaded.out, {"own-tasks"})));
}

TEST(Invisible, SingleThreadedProgramHasNoThreadOfOurs) {
  ExpectNoThreadOfOurs("single");
}

TEST(Invisible, ThreadGoneOneDecayPeriodAfterProgramThreadsJoined) {
  ExpectNoThreadOfOurs("multi");
}

TEST(Invisible, ForkChildOfASingleThreadedProgramHasNoThreadOfOurs) {
  ExpectNoThreadOfOurs("fork");
}

TEST(Invisible, UnshareOfAUserNamespaceAfterAPeakGivesWhatGlibcGives) {
  for (const auto& [mode, runs] : run_modes({"single", "multi"})) {
    SCOPED_TRACE("mode " + mode);
    ASSERT_TRUE(RanCleanly(runs));
    const std::set<std::string> unshare = {"unshare(CLONE_NEWUSER)"};
    EXPECT_TRUE(
        SameLines(lines_of(runs.glibc.out, unshare), lines_of(runs.preloaded.out, unshare)));
  }
}

TEST(Invisible, HelperThreadRunsAtSchedOtherOnEveryCpuWithEverySignalBlocked) {
  const Runs runs = run_modes({"multi-live"}).at("multi-live");
  ASSERT_TRUE(RanCleanly(runs));
  ExpectInvisibleHelpers(runs);
}

TEST(Invisible, HelperThreadOfAPinnedRealTimeProgramRunsAtSchedOtherOnEveryCpu) {
  const Runs runs = run_modes({"fifo"}).at("fifo");
  ASSERT_TRUE(RanCleanly(runs));
  const std::vector<std::string> realtime = lines_of(runs.glibc.out, {"realtime"});
  if (!realtime.empty()) GTEST_SKIP() << "SCHED_FIFO not permitted: " << realtime[0];
  ExpectInvisibleHelpers(runs);
}

// A program started on one CPU (taskset -c N): the helper runs there too, not on every CPU of the
// cpuset (the probe compares it with the CPUs it started with).
TEST(Invisible, HelperThreadOfAProgramStartedOnOneCpuStaysOnIt) {
  const Runs runs = run_modes({"multi-live"}, true).at("multi-live");
  ASSERT_TRUE(RanCleanly(runs));
  ExpectInvisibleHelpers(runs);
}

TEST(Invisible, WhatAProgramSeesOfItselfIsAsOnGlibcInEveryMode) {
  for (const auto& [mode, runs] : run_modes({"single", "multi", "multi-live", "fifo", "fork"})) {
    SCOPED_TRACE("mode " + mode);
    ASSERT_TRUE(RanCleanly(runs));
    EXPECT_EQ(runs.glibc.err, runs.preloaded.err);
    std::vector<std::string> preloaded = lines_of(runs.preloaded.out, kThreadFacts, true);
    // The one difference the test itself makes.
    const auto preload = std::find(preloaded.begin(), preloaded.end(),
                                   std::string("environ LD_PRELOAD=") + POOLALLOC_LIBRARY);
    ASSERT_NE(preload, preloaded.end()) << "LD_PRELOAD is not as it was given";
    preloaded.erase(preload);
    EXPECT_TRUE(SameLines(lines_of(runs.glibc.out, kThreadFacts, true), preloaded));
  }
}

}  // namespace
}  // namespace malloc_test
