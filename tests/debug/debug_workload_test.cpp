// The debug heap's own no-false-positive check: a correct, realistic, multithreaded program
// (containers and strings, realloc growth, over-aligned new, posix_memalign, blocks from the
// system allocator) runs under libpoolalloc-debug with every error only reported, and must
// finish with nothing at all on stderr.
#include <gtest/gtest.h>

#include "run_helper.hpp"

namespace {

TEST(DebugWorkload, RunsCleanWithNothingOnStderr) {
  const auto result = debug_test::run_helper("workload", {"POOLALLOC_ON_ERROR=report"});
  EXPECT_TRUE(debug_test::exited_with(result, 0)) << result.status;
  EXPECT_EQ(result.out, "done\n");
  EXPECT_EQ(result.err, "");
}

TEST(DebugWorkload, RunsCleanWithASmallQuarantine) {
  // Blocks leave the quarantine, and are checked, all the time.
  const auto result =
      debug_test::run_helper("workload", {"POOLALLOC_ON_ERROR=report", "POOLALLOC_QUARANTINE=64K"});
  EXPECT_TRUE(debug_test::exited_with(result, 0)) << result.status;
  EXPECT_EQ(result.out, "done\n");
  EXPECT_EQ(result.err, "");
}

}  // namespace
