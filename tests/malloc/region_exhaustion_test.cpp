// Run with POOLALLOC_REGION_SIZE=8M (set by ctest): once the region is used up, requests the
// pools would serve go to the system allocator, and everything keeps working.
#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

TEST(RegionExhaustion, OverflowGoesToTheSystemAllocator) {
  constexpr int kBlocks = 200000;  // 100-byte blocks: about 25 MB, three times the region
  std::vector<unsigned char*> blocks;
  int pooled = 0;
  for (int i = 0; i < kBlocks; ++i) {
    auto* p = static_cast<unsigned char*>(std::malloc(100));
    ASSERT_NE(p, nullptr);
    std::memset(p, i & 0xff, 100);
    pooled += poolalloc_owns(p) != 0;
    blocks.push_back(p);
  }
  EXPECT_GT(pooled, 0);
  EXPECT_LT(pooled, kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    ASSERT_EQ(blocks[i][99], i & 0xff);
    std::free(blocks[i]);
  }
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  EXPECT_GE(stats.system_requests, static_cast<std::uint64_t>(kBlocks - pooled));
}

}  // namespace
