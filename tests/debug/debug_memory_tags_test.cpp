// Memory tags in the debug build: the API answers as in the release build, and the debug heap's
// blocks (each one release block, with its guard bytes) are charged to the tag current at their
// malloc. A freed block waits in the quarantine before the release allocator gets it back, so
// only the charges are asserted here; the release build's tests hold the discharges.
#include <errno.h>
#include <stdlib.h>

#include <thread>

#include <gtest/gtest.h>

#include "poolalloc/poolalloc.h"
#include "poolalloc/tags.hpp"

namespace {

TEST(DebugMemoryTags, BlocksAreChargedToTheTagCurrentAtTheirMalloc) {
  const int tag = poolalloc_tag_register("DebugAI");
  ASSERT_GT(tag, 0);
  EXPECT_EQ(poolalloc_tag_register("DebugAI"), tag);
  void* blocks[100];
  {
    const poolalloc::TagScope scope(tag);
    ASSERT_TRUE(scope.pushed());
    EXPECT_EQ(poolalloc_tag_current(), tag);
    for (void*& p : blocks) p = malloc(48);
  }
  EXPECT_EQ(poolalloc_tag_current(), POOLALLOC_TAG_UNTAGGED);
  poolalloc_tag_stats stats{};
  ASSERT_EQ(poolalloc_get_tag_stats(tag, &stats), 0);
  EXPECT_EQ(stats.live_blocks, 100u);
  EXPECT_GE(stats.live_bytes, 100u * 48);
  EXPECT_STREQ(stats.name, "DebugAI");
  std::thread([&] {
    for (void* p : blocks) free(p);
  }).join();
}

TEST(DebugMemoryTags, BadInputGetsTheReleaseBuildsAnswers) {
  errno = 0;
  EXPECT_EQ(poolalloc_tag_push(200), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(poolalloc_tag_pop(), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(poolalloc_tag_register(""), -1);
  EXPECT_EQ(errno, EINVAL);
  poolalloc_tag_stats stats{};
  errno = 0;
  EXPECT_EQ(poolalloc_get_tag_stats(300, &stats), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
