// The POOLALLOC_* options, seen from outside: a program run with the library preloaded and an
// option set, its stderr captured.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// Runs `command` with libpoolalloc.so preloaded and `environment` set; returns its stderr.
std::string stderr_of(const std::string& environment, const std::string& command) {
  const std::string line =
      environment + " LD_PRELOAD=" POOLALLOC_LIBRARY " " + command + " 2>&1 >/dev/null";
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  pclose(pipe);
  return output;
}

TEST(Options, SilentByDefault) {
  EXPECT_EQ(stderr_of("", "ls /"), "");
}

TEST(Options, StatsPrintsTheTableAtExit) {
  const std::string table = stderr_of("POOLALLOC_STATS=1", "ls /");
  EXPECT_NE(table.find("poolalloc statistics"), std::string::npos) << table;
  EXPECT_NE(table.find("block size"), std::string::npos) << table;
  EXPECT_NE(table.find("pooled requests: "), std::string::npos) << table;
}

TEST(Options, InvalidValueIsReportedOnceAndTheDefaultKept) {
  const std::string report = stderr_of("POOLALLOC_MAX_POOLED=lots", "ls /");
  EXPECT_EQ(report,
            "poolalloc: ignoring POOLALLOC_MAX_POOLED=lots (expected a size from 0 to 32768); "
            "using 32768\n");
  EXPECT_NE(stderr_of("POOLALLOC_MAX_POOLED=40000", "ls /").find("ignoring"), std::string::npos);
  EXPECT_NE(stderr_of("POOLALLOC_STATS=yes", "ls /").find("expected 0 or 1"), std::string::npos);
}

// The bounds the message names are the bounds enforced, both inclusive, with every suffix.
TEST(Options, RegionSizeAcceptsExactlyEightMToSixtyFourT) {
  const std::string expected =
      " (expected a size from 8M to 64T, such as 16G); using 68719476736\n";
  for (const char* accepted : {"8M", "8388608", "8192K", "64T", "70368744177664", "65536G", "1t"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE=") + accepted, "ls /"), "") << accepted;
  for (const char* rejected : {"8388607", "70368744177665", "65T", "65537G", "7M", "16E", "T"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE=") + rejected, "ls /"),
              std::string("poolalloc: ignoring POOLALLOC_REGION_SIZE=") + rejected + expected)
        << rejected;
}

TEST(Options, MaxPooledSendsLargerRequestsToTheSystem) {
  const std::string table = stderr_of("POOLALLOC_STATS=1 POOLALLOC_MAX_POOLED=0", "ls /");
  EXPECT_NE(table.find("pooled requests: 0\n"), std::string::npos) << table;
}

std::string file_contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the descriptor helper in `mode` with POOLALLOC_STATS=1, its stderr into a file, and
// returns its exit status; *data and *err receive the data file and what stderr got.
int run_helper(const std::string& mode, std::string* data, std::string* err) {
  char directory[] = "/tmp/poolalloc-stats-fd-XXXXXX";
  if (mkdtemp(directory) == nullptr) return -1;
  const std::string data_path = std::string(directory) + "/data";
  const std::string err_path = std::string(directory) + "/stderr";
  const std::string line =
      "POOLALLOC_STATS=1 LD_PRELOAD=" POOLALLOC_LIBRARY " " STATS_FD_HELPER " " + mode + " " +
      data_path + " 2>" + err_path + " 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-";
  const int status = std::system(line.c_str());
  *data = file_contents(data_path);
  *err = file_contents(err_path);
  unlink(data_path.c_str());
  unlink(err_path.c_str());
  rmdir(directory);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A daemon closes every inherited descriptor above 2, the library's copy of stderr among them,
// and opens its data file on the numbers that freed: the table goes to stderr, never into it.
TEST(StatsDestination, ADaemonsDataFileGetsNoTable) {
  std::string data, err;
  ASSERT_EQ(run_helper("daemon", &data, &err), 0);
  EXPECT_EQ(data, "payload\n");
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// The same with stderr closed too, and the data file opened on fd 2 itself: nothing refers to
// the stderr the program started with, so the table goes nowhere.
TEST(StatsDestination, NoTableWhenNoDescriptorIsStderrAnyMore) {
  std::string data, err;
  ASSERT_EQ(run_helper("daemon-all", &data, &err), 0);
  EXPECT_EQ(data, "payload\n");
  EXPECT_EQ(err, "");
}

// Programs and their tests see descriptor numbers: with the statistics on, the program's first
// open() still gets 3, as without the library (fds 3 to 9 are closed for the helper, in case
// the test runner leaks some).
TEST(StatsDestination, FirstOpenOfTheProgramGetsThree) {
  std::string data, err;
  ASSERT_EQ(run_helper("first-open", &data, &err), 0) << "the program's first open() was not fd 3";
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// coreutils and xz close fd 2 before they exit: the table goes to the copy taken at start-up.
TEST(StatsDestination, StderrClosedAtExitStillGetsTheTable) {
  std::string data, err;
  ASSERT_EQ(run_helper("close-stderr", &data, &err), 0);
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// stderr is a pipe whose reader has gone by the time the table is written: the program's exit
// status must be its own, not death by SIGPIPE.
TEST(StatsDestination, APipeWithoutReaderAtExitKillsNothing) {
  const std::string line =
      "bash -c 'POOLALLOC_STATS=1 LD_PRELOAD=" POOLALLOC_LIBRARY " " STATS_FD_HELPER
      " slow-exit 2>&1 >/dev/null | true; "
      "exit ${PIPESTATUS[0]}'";
  const int status = std::system(line.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "141 is death by SIGPIPE";
}

}  // namespace
