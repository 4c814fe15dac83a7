// The POOLALLOC_* options, seen from outside: a program run with the library preloaded and an
// option set, its stderr captured.
#include <gtest/gtest.h>

#include <cstdio>
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

}  // namespace
