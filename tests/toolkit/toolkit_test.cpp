// The promises of the toolkit as a whole: one include brings in every part, and every allocator
// carries a name of its own.
#include <poolalloc/toolkit.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <memory_resource>
#include <sstream>
#include <string>
#include <vector>

namespace {

TEST(Toolkit, OneIncludeBringsInEveryPart) {
  poolalloc::FixedPool blocks(16, 4);
  poolalloc::Pool<int> pool(4);
  poolalloc::FrameAllocator frame(256);
  poolalloc::DoubleBufferedFrameAllocator frames(256);
  poolalloc::StackAllocator stack(256);
  poolalloc::StackScope scope(stack);
  poolalloc::PoolResource resource;
  poolalloc::FrameResource frame_resource(frame);
  poolalloc::StackResource stack_resource(stack);
  std::vector<int, poolalloc::StlAllocator<int, poolalloc::FrameAllocator>> values{
      poolalloc::StlAllocator<int, poolalloc::FrameAllocator>(frame)};
  poolalloc::Tracked tracked(blocks, 64);
  poolalloc::Synchronized<poolalloc::Pool<int>> shared(4);
  const poolalloc::Handle<int> handle = pool.handle_of(pool.spawn(1));
  EXPECT_EQ(*pool.get(handle), 1);
  EXPECT_NE(tracked.allocate(), nullptr);
  EXPECT_NE(frames.allocate(8), nullptr);
  EXPECT_NE(stack.allocate(8), nullptr);
  std::pmr::vector<int> pooled({1, 2}, &resource);
  std::pmr::vector<int> in_frame({1, 2}, &frame_resource);
  std::pmr::vector<int> on_stack({1, 2}, &stack_resource);
  values.push_back(3);
  shared.despawn(shared.spawn(2));
  std::ostringstream budgets;
  poolalloc::print_budgets(budgets);
  EXPECT_NE(budgets.str().find("(unnamed)"), std::string::npos);
}

// The name is copied: the buffer it came from may change or go. Up to 31 characters are kept,
// and operator<< shows the name.
template <class Allocator>
void expect_a_copied_name(Allocator& allocator) {
  char name[64];
  std::strcpy(name, "bullets of the second wave, and more than 31 characters");
  allocator.set_name(name);
  std::strcpy(name, "changed");
  std::ostringstream out;
  out << allocator;
  EXPECT_NE(out.str().find("\"bullets of the second wave, and\""), std::string::npos) << out.str();
}

TEST(Toolkit, EveryAllocatorCopiesItsNameAndShowsIt) {
  poolalloc::FixedPool blocks(16, 4);
  poolalloc::Pool<int> pool(4);
  poolalloc::FrameAllocator frame(256);
  poolalloc::DoubleBufferedFrameAllocator frames(256);
  poolalloc::StackAllocator stack(256);
  poolalloc::PoolResource resource;
  expect_a_copied_name(blocks);
  expect_a_copied_name(pool);
  expect_a_copied_name(frame);
  expect_a_copied_name(frames);
  expect_a_copied_name(stack);
  expect_a_copied_name(resource);
  EXPECT_EQ(blocks.name(), "bullets of the second wave, and");
  EXPECT_EQ(pool.name(), "bullets of the second wave, and");
  EXPECT_EQ(frame.name(), "bullets of the second wave, and");
  EXPECT_EQ(stack.name(), "bullets of the second wave, and");
  EXPECT_EQ(resource.name(), "bullets of the second wave, and");

  poolalloc::Tracked tracked(blocks, 64);  // a tracker shows its name in print_budgets()
  char name[64];
  std::strcpy(name, "bullets of the second wave, and more than 31 characters");
  tracked.set_name(name);
  std::strcpy(name, "changed");
  EXPECT_EQ(tracked.name(), "bullets of the second wave, and");
}

}  // namespace
