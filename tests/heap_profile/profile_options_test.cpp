// The heap profile as a preloaded or linked program sets it up with POOLALLOC_PROFILE_*
// variables (docs/profiling.md): when it is written, what it holds, and that it stays out of
// the way when off. profile_probe is the program; each test runs it in a directory of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "profile_test_util.hpp"

namespace {

using profile_test::figure_of;
using profile_test::go_installed;
using profile_test::pprof_top;
using profile_test::run_in;
using profile_test::ScratchDirectory;

const std::string kProbe = PROFILE_PROBE;

std::string read_output(const ScratchDirectory& directory) {
  std::ifstream in(directory.path() + "/output");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(HeapProfile, IsOffByDefaultAndWritesNoFile) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(), "", kProbe + " live"), 0);
  EXPECT_TRUE(directory.files_starting("poolalloc").empty());
  EXPECT_EQ(read_output(directory), "");
}

TEST(HeapProfile, WritesAtExitWhenOnWithTheSitesLiveBytesEstimated) {
  if (!go_installed()) GTEST_SKIP() << "go (golang-go) is not installed";
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(), "POOLALLOC_PROFILE=1", kProbe + " live"), 0);
  const auto files = directory.files_starting("poolalloc.");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find(".exit.pb"), std::string::npos) << files[0];
  std::string text;
  const auto flat = pprof_top(kProbe, directory.path() + "/" + files[0], "inuse_space", &text);
  // 64 MiB in blocks of 64 bytes: at the default mean of 512 KiB the estimate's standard
  // deviation is about 5.7 MiB, so four of them leave 41 to 87 MiB.
  const double live = figure_of(flat, "probe_live_site");
  EXPECT_GT(live, 41.0 * (1 << 20)) << text;
  EXPECT_LT(live, 87.0 * (1 << 20)) << text;
  EXPECT_EQ(read_output(directory), "");
}

TEST(HeapProfile, AtExitCanBeTurnedOff) {
  ScratchDirectory directory;
  ASSERT_EQ(
      run_in(directory.path(), "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0", kProbe + " live"),
      0);
  EXPECT_TRUE(directory.files_starting("poolalloc").empty());
}

TEST(HeapProfile, PrefixNamesTheFilesRelativeToTheStartingDirectory) {
  ScratchDirectory directory;
  ASSERT_EQ(std::system(("mkdir '" + directory.path() + "/heap'").c_str()), 0);
  ASSERT_EQ(run_in(directory.path(), "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_PREFIX=heap/app",
                   kProbe + " live"),
            0);
  std::system(("ls '" + directory.path() + "/heap' > '" + directory.path() + "/listing'").c_str());
  std::ifstream listing(directory.path() + "/listing");
  std::string name;
  ASSERT_TRUE(std::getline(listing, name));
  EXPECT_EQ(name.rfind("app.", 0), 0u) << name;
  EXPECT_NE(name.find(".exit.pb"), std::string::npos) << name;
}

TEST(HeapProfile, WritesEveryNBytesAllocated) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(),
                   "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 POOLALLOC_PROFILE_EVERY=16M",
                   kProbe + " every"),
            0);
  // 64 MiB allocated (estimated from the samples): about four dumps, three at the least.
  const auto files = directory.files_starting("poolalloc.");
  EXPECT_GE(files.size(), 3u);
  EXPECT_LE(files.size(), 6u);
  for (const std::string& file : files) EXPECT_NE(file.find(".every.pb"), std::string::npos);
}

// libunwind allocates a thread's block of its thread-local variables at the thread's first
// capture, inside the sampled malloc: at a mean of 1 byte that malloc is sampled too, and each
// capture would start another.
TEST(HeapProfile, AMeanOfOneByteSamplesEveryAllocationAndTheProgramRunsToItsEnd) {
  for (const char* mode : {"every", "signal"}) {
    ScratchDirectory directory;
    ASSERT_EQ(run_in(directory.path(),
                     "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 POOLALLOC_PROFILE_SAMPLE=1 "
                     "POOLALLOC_PROFILE_SIGNAL=USR2",
                     kProbe + " " + mode),
              0)
        << mode << ": " << read_output(directory);
    EXPECT_EQ(read_output(directory), "") << mode;
  }
}

// Threads that reach new peaks at once: one writes the file at a time, through its partial file,
// and none reports a failure that was another's rename.
TEST(HeapProfile, PeaksReachedByThreadsAtOnceAreWrittenWithoutAFalseFailure) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(),
                   "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 POOLALLOC_PROFILE_PEAK=1M",
                   kProbe + " peak-threads"),
            0);
  EXPECT_EQ(read_output(directory), "");
  const auto files = directory.files_starting("poolalloc.");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find(".peak.pb"), std::string::npos);
}

TEST(HeapProfile, PeakFileHoldsTheWorstMoment) {
  if (!go_installed()) GTEST_SKIP() << "go (golang-go) is not installed";
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(),
                   "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 POOLALLOC_PROFILE_PEAK=16M",
                   kProbe + " peak"),
            0);
  const auto files = directory.files_starting("poolalloc.");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find(".peak.pb"), std::string::npos);
  std::string text;
  const auto flat = pprof_top(kProbe, directory.path() + "/" + files[0], "inuse_space", &text);
  // The peak held 64 MiB at probe_live_site; what came after it is not in the file.
  EXPECT_GT(figure_of(flat, "probe_live_site"), 41.0 * (1 << 20)) << text;
  EXPECT_EQ(figure_of(flat, "probe_after_peak"), 0) << text;
}

TEST(HeapProfile, WritesOnTheNamedSignalWhileOtherThreadsAllocate) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(),
                   "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 POOLALLOC_PROFILE_SIGNAL=USR2",
                   kProbe + " signal"),
            0)
      << read_output(directory);
  const auto files = directory.files_starting("poolalloc.");
  EXPECT_EQ(files.size(), 20u);
  for (const std::string& file : files) EXPECT_NE(file.find(".signal.pb"), std::string::npos);
}

TEST(HeapProfile, DumpsSurviveForksAndTheChildrenDumpToo) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(), "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0",
                   "timeout 120 " + kProbe + " fork"),
            0)
      << read_output(directory);
  EXPECT_EQ(directory.files_starting("child-").size(), 40u);
}

TEST(HeapProfile, AnUnwritablePrefixIsReportedOnceAndTheProgramRunsOn) {
  ScratchDirectory directory;
  // Four dumps or so every 16 MiB, and one at exit: all fail, one line says so.
  ASSERT_EQ(run_in(directory.path(),
                   "POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_EVERY=16M "
                   "POOLALLOC_PROFILE_PREFIX=/nonexistent-dir/heap",
                   kProbe + " every"),
            0);
  const std::string output = read_output(directory);
  EXPECT_EQ(output.rfind("poolalloc: cannot write the heap profile to /nonexistent-dir/heap.", 0),
            0u)
      << output;
  EXPECT_NE(output.find("No such file or directory"), std::string::npos) << output;
  EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
}

TEST(HeapProfile, AFaultSignalIsRefusedSoThatACrashStillEnds) {
  for (const char* signal : {"SEGV", "BUS", "FPE", "ILL", "ABRT", "11"}) {
    ScratchDirectory directory;
    ASSERT_EQ(run_in(directory.path(),
                     std::string("POOLALLOC_PROFILE=1 POOLALLOC_PROFILE_AT_EXIT=0 "
                                 "POOLALLOC_PROFILE_SIGNAL=") +
                         signal,
                     kProbe + " live"),
              0);
    EXPECT_NE(read_output(directory).find("poolalloc: ignoring POOLALLOC_PROFILE_SIGNAL="),
              std::string::npos)
        << signal;
  }
}

TEST(HeapProfile, TheSignalWritesAProfileAlsoWhenSamplingIsTurnedOnByACall) {
  ScratchDirectory directory;
  ASSERT_EQ(run_in(directory.path(), "POOLALLOC_PROFILE_SIGNAL=USR2", kProbe + " signal"), 0)
      << read_output(directory);
  EXPECT_EQ(directory.files_starting("poolalloc.").size(), 20u);
}

}  // namespace
