// Built with POOLALLOC_DEBUG defined (in its own executable, since the macro changes a default).
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

namespace {

static_assert(poolalloc::kDefaultDebugChecks == poolalloc::DebugChecks::on);

TEST(PoolallocDebugMacroDeathTest, TurnsOnDebugChecksByDefault) {
  poolalloc::Pool<int> pool(4);
  EXPECT_TRUE(pool.debug_checks());
  poolalloc::FixedPool blocks(16, 4);
  void* block = blocks.allocate();
  blocks.deallocate(block);
  EXPECT_DEATH(blocks.deallocate(block), "already free \\(double free\\)");
}

}  // namespace
