#include <poolalloc/stack_allocator.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <utility>

#include "address_text.hpp"
#include "given_back.hpp"

namespace {

using poolalloc::StackAllocator;
using poolalloc::StackScope;

TEST(StackAllocator, FreeToMarkerGivesBackEverythingAllocatedSince) {
  StackAllocator stack(1024);
  (void)stack.allocate(10, 1);
  const auto marker = stack.marker();
  void* a = stack.allocate(100, 1);
  (void)stack.allocate(200, 1);
  EXPECT_EQ(stack.used(), 310u);
  stack.free_to_marker(marker);
  EXPECT_EQ(stack.used(), 10u);
  EXPECT_EQ(stack.allocate(100, 1), a);
  EXPECT_EQ(stack.peak(), 310u);
  EXPECT_EQ(stack.capacity(), 1024u);
}

TEST(StackAllocator, NestedMarkersUnwindInLifoOrder) {
  StackAllocator stack(1024);
  const auto outer = stack.marker();
  (void)stack.allocate(64);
  const auto inner = stack.marker();
  (void)stack.allocate(64);
  EXPECT_FALSE(inner == outer);
  stack.free_to_marker(inner);
  EXPECT_EQ(stack.used(), 64u);
  EXPECT_TRUE(stack.marker() == inner);
  stack.free_to_marker(outer);
  EXPECT_EQ(stack.used(), 0u);
  stack.free_to_marker(outer);  // freeing to the top again is harmless
  EXPECT_EQ(stack.used(), 0u);
}

TEST(StackAllocator, ReturnsNullptrWhenFullOrAskedForTheImpossible) {
  StackAllocator stack(128);
  EXPECT_NE(stack.allocate(128, 1), nullptr);
  EXPECT_EQ(stack.allocate(1, 1), nullptr);
  EXPECT_EQ(stack.allocate(SIZE_MAX, 1), nullptr);
  EXPECT_EQ(stack.allocate(1, std::size_t{1} << 63), nullptr);
  EXPECT_EQ(stack.allocate(1, 12), nullptr);
  EXPECT_EQ(stack.used(), 128u);
}

TEST(StackAllocator, AScopeFreesToItsMarker) {
  StackAllocator stack(1024);
  (void)stack.allocate(16);
  {
    StackScope scope(stack);
    (void)stack.allocate(100);
    {
      StackScope inner(stack);
      (void)stack.allocate(300);
    }
    EXPECT_EQ(stack.used(), 116u);
  }
  EXPECT_EQ(stack.used(), 16u);
}

struct Tally {
  static inline int destroyed = 0;
  ~Tally() { ++destroyed; }
};

TEST(StackAllocator, FreeToMarkerRunsNoDestructors) {
  StackAllocator stack(1024);
  const auto start = stack.marker();
  ASSERT_NE(stack.new_object<Tally>(), nullptr);
  ASSERT_NE(stack.new_array<Tally>(4), nullptr);
  stack.free_to_marker(start);
  EXPECT_EQ(stack.used(), 0u);
  EXPECT_EQ(Tally::destroyed, 0);
}

using StackAllocatorDeathTest = ::testing::Test;

TEST_F(StackAllocatorDeathTest, AMarkerAboveTheTopIsRejected) {
  StackAllocator stack(1024);
  const auto bottom = stack.marker();
  (void)stack.allocate(64, 1);
  const auto stale = stack.marker();
  stack.free_to_marker(bottom);
  EXPECT_DEATH(stack.free_to_marker(stale),
               "^poolalloc: StackAllocator 0x\\w+ \\(0 of 1024 B used\\): free_to_marker\\(64\\) "
               "is above the top; that memory was already given back");
}

TEST(StackAllocator, WorksOverCallerMemory) {
  alignas(16) static std::byte buffer[128];
  StackAllocator stack(buffer, sizeof buffer);
  const auto start = stack.marker();
  EXPECT_EQ(stack.new_array<std::uint64_t>(16), reinterpret_cast<std::uint64_t*>(buffer));
  EXPECT_EQ(stack.new_object<char>('x'), nullptr);
  stack.free_to_marker(start);
  EXPECT_EQ(*stack.new_object<char>('x'), 'x');
}

struct Aggregate {  // no constructor: see FrameAllocator.NewObjectBuildsAnAggregateFromItsMembers
  float x, y, z;
};

TEST(StackAllocator, NewObjectBuildsAnAggregateFromItsMembers) {
  StackAllocator stack(1024);
  EXPECT_EQ(stack.new_object<Aggregate>(1.0f, 2.0f, 3.0f)->z, 3.0f);
}

TEST(StackAllocator, PrintsItsStateInOneLine) {
  StackAllocator stack(1024);
  stack.set_name("level");
  (void)stack.allocate(64, 1);
  std::ostringstream out;
  out << stack;
  EXPECT_EQ(out.str(), "StackAllocator \"level\": 64 of 1024 B used, peak 64 B");
}

TEST_F(StackAllocatorDeathTest, AReportNamesTheStack) {
  StackAllocator stack(1024);
  stack.set_name("level");
  const auto marker = stack.marker();
  (void)stack.allocate(64, 1);
  const auto above = stack.marker();
  stack.free_to_marker(marker);
  EXPECT_DEATH(stack.free_to_marker(above), "^poolalloc: StackAllocator \"level\" \\(0 of 1024");
}

TEST(StackAllocator, AMoveTakesTheMemoryAndItsMarkersAlong) {
  StackAllocator source(1024);
  (void)source.allocate(10, 1);
  const auto marker = source.marker();
  (void)source.allocate(100, 1);
  StackAllocator stack(std::move(source));
  EXPECT_EQ(stack.used(), 110u);
  stack.free_to_marker(marker);
  EXPECT_EQ(stack.used(), 10u);
  EXPECT_EQ(source.capacity(), 0u);  // NOLINT(bugprone-use-after-move): what is left
  EXPECT_EQ(source.allocate(1, 1), nullptr);
  StackAllocator assigned(64);
  assigned = std::move(stack);
  EXPECT_EQ(assigned.capacity(), 1024u);
  EXPECT_EQ(stack.capacity(), 0u);  // NOLINT(bugprone-use-after-move): what is left
  EXPECT_EQ(stack.allocate(0, 1), nullptr);
}

TEST_F(StackAllocatorDeathTest, AMarkerOfAnotherStackIsRejected) {
  StackAllocator stack(1024);
  StackAllocator other(1024);
  (void)other.allocate(64, 1);
  const auto foreign = other.marker();
  (void)stack.allocate(128, 1);
  EXPECT_DEATH(stack.free_to_marker(foreign),
               "^poolalloc: StackAllocator 0x\\w+ \\(128 of 1024 B used\\): "
               "free_to_marker\\(0x\\w+\\) is of another stack");
}

// One buffer split into two stacks: the top of the full lower one is the upper one's bottom.
TEST_F(StackAllocatorDeathTest, AMarkerOfAnAdjacentStackIsRejected) {
  alignas(16) static std::byte buffer[2048];
  StackAllocator lower(buffer, 1024);
  StackAllocator upper(buffer + 1024, 1024);
  const auto upper_bottom = upper.marker();
  (void)lower.allocate(1024, 1);
  const auto lower_top = lower.marker();
  (void)upper.allocate(512, 1);
  EXPECT_DEATH(upper.free_to_marker(lower_top),
               "^poolalloc: StackAllocator 0x\\w+ \\(512 of 1024 B used\\): "
               "free_to_marker\\(" +
                   death_test_hex(buffer + 1024) + "\\) is of another stack");
  EXPECT_DEATH(lower.free_to_marker(upper_bottom),
               "^poolalloc: StackAllocator 0x\\w+ \\(1024 of 1024 B used\\): "
               "free_to_marker\\(" +
                   death_test_hex(buffer + 1024) + "\\) is of another stack");
}

// A stack made over the memory of a destroyed one: the old stack's marker points into it.
TEST_F(StackAllocatorDeathTest, AMarkerOfADestroyedStackIsRejected) {
  alignas(16) static std::byte buffer[1024];
  const auto checkpoint = [] {
    StackAllocator level(buffer, sizeof buffer);
    (void)level.allocate(100, 1);
    return level.marker();
  }();
  StackAllocator next_level(buffer, sizeof buffer);
  (void)next_level.allocate(500, 1);
  EXPECT_DEATH(next_level.free_to_marker(checkpoint),
               "^poolalloc: StackAllocator 0x\\w+ \\(500 of 1024 B used\\): "
               "free_to_marker\\(" +
                   death_test_hex(buffer + 100) + "\\) is of another stack");
}

TEST_F(StackAllocatorDeathTest, AMarkerOfAMovedFromStackIsRejected) {
  StackAllocator source(1024);
  const auto marker = source.marker();
  StackAllocator stack(std::move(source));
  EXPECT_DEATH(source.free_to_marker(marker),  // NOLINT(bugprone-use-after-move): the test
               "\\(0 of 0 B used\\): free_to_marker\\(0x\\w+\\) is of another stack");
}

TEST_F(StackAllocatorDeathTest, AMarkerThatTheLastFreeWentBelowIsRejected) {
  StackAllocator stack(1024);
  const auto level = stack.marker();
  (void)stack.allocate(64, 1);
  const auto inner = stack.marker();  // kept past the free to `level`
  (void)stack.allocate(64, 1);
  stack.free_to_marker(level);
  (void)stack.allocate(256, 1);  // someone else's now, over inner's position
  EXPECT_DEATH(stack.free_to_marker(inner),
               "^poolalloc: StackAllocator 0x\\w+ \\(256 of 1024 B used\\): "
               "free_to_marker\\(64\\) was taken before a free below it; that memory was "
               "given back and may be another's now");
}

TEST(StackAllocator, MarkersBetweenNestedFreesStayValid) {
  StackAllocator stack(1024);
  const auto outer = stack.marker();
  (void)stack.allocate(64, 1);
  const auto middle = stack.marker();
  (void)stack.allocate(64, 1);
  const auto inner = stack.marker();
  (void)stack.allocate(64, 1);
  stack.free_to_marker(inner);
  (void)stack.allocate(32, 1);
  stack.free_to_marker(inner);
  stack.free_to_marker(middle);
  stack.free_to_marker(middle);
  stack.free_to_marker(outer);
  EXPECT_EQ(stack.used(), 0u);
}

TEST_F(StackAllocatorDeathTest,
       AWriteThroughAPointerFromBeforeFreeToMarkerIsReportedWhenHandedOutAgain) {
  StackAllocator stack(1024, poolalloc::DebugChecks::on);
  (void)stack.allocate(16, 1);
  const auto marker = stack.marker();
  auto* stale = static_cast<unsigned char*>(stack.allocate(64, 1));
  EXPECT_EQ(stale[63], 0xA5);
  stack.free_to_marker(marker);
  EXPECT_EQ(read_given_back(stale), 0x5A);
  write_given_back(stale + 63, 0);
  EXPECT_DEATH((void)stack.allocate(64, 1),
               "^poolalloc: StackAllocator 0x\\w+ \\(16 of 1024 B used\\): allocate found " +
                   death_test_hex(stale + 63) + " written after it was given back");
}

TEST_F(StackAllocatorDeathTest, AWriteAfterFreeToMarkerIsUseAfterPoisonUnderAddressSanitizer) {
  if (!poolalloc::detail::kAddressSanitizer) GTEST_SKIP() << "a test of AddressSanitizer builds";
  StackAllocator stack(1024);
  const auto marker = stack.marker();
  auto* stale = static_cast<volatile unsigned char*>(stack.allocate(64));
  stack.free_to_marker(marker);
  EXPECT_DEATH(stale[8] = 1, "use-after-poison");
}

}  // namespace
