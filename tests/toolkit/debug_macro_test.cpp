// Built with POOLALLOC_DEBUG defined (in its own executable, since the macro changes a default).
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/stack_allocator.hpp>

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

TEST(PoolallocDebugMacro, MakesDebugChecksTheDefaultOfFrameAndStackAllocators) {
  EXPECT_TRUE(poolalloc::FrameAllocator(64).debug_checks());
  EXPECT_TRUE(poolalloc::DoubleBufferedFrameAllocator(64).debug_checks());
  EXPECT_TRUE(poolalloc::StackAllocator(64).debug_checks());
}

}  // namespace
