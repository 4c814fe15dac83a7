// Built with POOLALLOC_DEBUG defined (in its own executable, since the macro changes a default).
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

namespace {

static_assert(poolalloc::kDefaultDebugChecks == poolalloc::DebugChecks::on);

TEST(PoolallocDebugMacroDeathTest, TurnsOnDebugChecksByDefault) {
  poolalloc::Pool<int> pool(4);
  int* value = pool.spawn(1);
  pool.despawn(value);
  EXPECT_DEATH(pool.despawn(value), "already free \\(double free\\)");
}

}  // namespace
