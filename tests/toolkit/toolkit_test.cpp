// The promises of the toolkit as a whole: one include brings in every part, and every allocator
// carries a name of its own.
#include <poolalloc/toolkit.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <iomanip>
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

// One of each allocator and wrapper that prints a line, each with memory in use, for the tests of
// those lines.
struct EveryPrinter {
  poolalloc::FixedPool blocks{16, 1000};
  poolalloc::Pool<int> pool{1000};
  poolalloc::FrameAllocator frame{1000};
  poolalloc::DoubleBufferedFrameAllocator frames{1000};
  poolalloc::StackAllocator stack{1000};
  poolalloc::PoolResource resource;
  poolalloc::Synchronized<poolalloc::FixedPool> shared{16, 1000};
  poolalloc::Tracked<poolalloc::FixedPool> tracked{blocks, 65536};
  poolalloc::TrackedResource tracked_resource{&resource, 65536};

  EveryPrinter() {
    blocks.set_name("bullets");
    for (int i = 0; i < 300; ++i) {
      (void)blocks.allocate();
      (void)pool.spawn(i);
      (void)frame.allocate(1);
      (void)frames.allocate(1);
      (void)stack.allocate(1);
      (void)resource.allocate(8);
      (void)shared.allocate();
    }
  }
  EveryPrinter(const EveryPrinter&) = delete;
  EveryPrinter& operator=(const EveryPrinter&) = delete;
  ~EveryPrinter() { resource.release(); }

  template <class F>
  void each(F&& f) const {
    f(blocks);
    f(pool);
    f(frame);
    f(frames);
    f(stack);
    f(resource);
    f(shared);
    f(tracked);
    f(tracked_resource);
  }
};

// Printed into a stream left in hexadecimal with another fill, as a program's own output may leave
// it: the same line as into a fresh stream, and the stream as it was after.
TEST(Toolkit, EveryAllocatorPrintsInDecimalWhateverTheStreamWasLeftIn) {
  const EveryPrinter printers;
  printers.each([](const auto& allocator) {
    std::ostringstream fresh;
    fresh << allocator;
    std::ostringstream hexadecimal;
    hexadecimal << std::hex << std::setfill('*') << std::setw(4);
    hexadecimal << allocator;
    EXPECT_EQ(hexadecimal.str(), fresh.str());
    hexadecimal.str("");
    hexadecimal << std::setw(4) << 255;
    EXPECT_EQ(hexadecimal.str(), "**ff");
  });
}

// Printed after std::setw: the whole line padded with the stream's fill, on the left or, with
// std::left, on the right, as a number would be.
TEST(Toolkit, AWidthSetOnTheStreamPadsTheWholeLine) {
  const EveryPrinter printers;
  printers.each([](const auto& allocator) {
    std::ostringstream fresh;
    fresh << allocator;
    const auto width = static_cast<int>(fresh.str().size()) + 7;
    std::ostringstream right;
    right << std::setfill('.') << std::setw(width) << allocator << '|';
    EXPECT_EQ(right.str(), "......." + fresh.str() + "|");
    std::ostringstream left;
    left << std::left << std::setw(width) << allocator << '|';
    EXPECT_EQ(left.str(), fresh.str() + "       |");
  });
}

}  // namespace
