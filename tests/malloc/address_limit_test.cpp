// The pools under an address-space limit (RLIMIT_AS, ulimit -v, as batch schedulers set it):
// they must not take a share of it that the program needs, neither when the limit is set before
// the program starts nor when the program lowers it later. Each test runs address_limit_helper
// (ADDRESS_LIMIT_HELPER), which links libpoolalloc.so, with the limit set before it starts.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr std::size_t kNoLimit = 0;

// Runs the helper in `mode` (with `argument`, if any) under an address-space limit of
// `limit_bytes` set before it starts (kNoLimit: none), with `variable` (NAME=value) added to the
// environment; returns its wait status.
int run_helper(std::size_t limit_bytes, const std::string& mode, const std::string& argument = "",
               const std::string& variable = "") {
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("POOLALLOC_", 0) != 0) variables.push_back(text);
  }
  if (!variable.empty()) variables.push_back(variable);
  std::vector<char*> envp;
  for (auto& text : variables) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::string path = ADDRESS_LIMIT_HELPER;
  std::string mode_text = mode;
  std::string argument_text = argument;
  std::vector<char*> argv{path.data(), mode_text.data()};
  if (!argument.empty()) argv.push_back(argument_text.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (limit_bytes != kNoLimit) {
      rlimit limit{};
      getrlimit(RLIMIT_AS, &limit);
      limit.rlim_cur = limit_bytes;
      if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
    }
    execve(path.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = -1;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

bool succeeded(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

// ulimit -v 1572864: glibc serves malloc(900 MiB); the pools must leave it the room.
TEST(AddressLimit, LargeRequestFitsUnderALimitSetBeforeStart) {
  EXPECT_TRUE(succeeded(run_helper(1536 * kMiB, "large", "900")));
}

// The same with the largest region the option accepts: it is a cap, not a reservation.
TEST(AddressLimit, LargestRegionSizeTakesNoAddressSpaceAhead) {
  EXPECT_TRUE(succeeded(run_helper(1536 * kMiB, "large", "900", "POOLALLOC_REGION_SIZE=64T")));
}

// glibc's tst-malloc-thread-fail: RLIMIT_AS lowered to 200 MiB after start-up, then threads.
TEST(AddressLimit, ThreadsWorkAfterTheLimitIsLowered) {
  EXPECT_TRUE(
      succeeded(run_helper(kNoLimit, "lowered", "", "GLIBC_TUNABLES=glibc.malloc.arena_max=1")));
}

TEST(AddressLimit, ExhaustionAtTheLimitFailsCleanlyAndRecovers) {
  EXPECT_TRUE(succeeded(run_helper(kNoLimit, "tight")));
}

TEST(RegionGrowth, AMappingRightAfterTheRegionStopsItAndIsNeverOurs) {
  EXPECT_TRUE(succeeded(run_helper(kNoLimit, "blocked")));
}

TEST(RegionGrowth, ForkAfterGrowth) {
  EXPECT_TRUE(succeeded(run_helper(kNoLimit, "fork")));
}

TEST(RegionGrowth, BlocksOfFreshSpansAreOwnedInEveryThread) {
  EXPECT_TRUE(succeeded(run_helper(kNoLimit, "race")));
}

TEST(RegionGrowth, StaysOneMapping) {
  EXPECT_TRUE(succeeded(run_helper(kNoLimit, "vmas")));
}

}  // namespace
