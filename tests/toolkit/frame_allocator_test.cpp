#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/stack_allocator.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "address_text.hpp"
#include "given_back.hpp"

namespace {

using poolalloc::DebugChecks;
using poolalloc::DoubleBufferedFrameAllocator;
using poolalloc::FrameAllocator;
using poolalloc::StackAllocator;

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

TEST(FrameAllocator, HandsOutAlignedConsecutiveMemory) {
  FrameAllocator frame(1024);
  auto* a = static_cast<char*>(frame.allocate(3, 1));
  auto* b = static_cast<char*>(frame.allocate(8, 8));
  auto* c = static_cast<char*>(frame.allocate(1, 64));
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(aligned(b, 8));
  EXPECT_TRUE(aligned(c, 64));
  EXPECT_GE(b, a + 3);
  EXPECT_GE(c, b + 8);
  EXPECT_LT(b, a + 3 + 8);
  EXPECT_EQ(frame.used(), static_cast<std::size_t>(c + 1 - a));
  EXPECT_EQ(frame.capacity(), 1024u);
}

TEST(FrameAllocator, DefaultsToMaxAlignment) {
  FrameAllocator frame(256);
  (void)frame.allocate(1, 1);
  EXPECT_TRUE(aligned(frame.allocate(1), alignof(std::max_align_t)));
}

TEST(FrameAllocator, ReturnsNullptrWhenFullAndFitsExactly) {
  FrameAllocator frame(64);
  ASSERT_NE(frame.allocate(60, 1), nullptr);
  EXPECT_EQ(frame.allocate(5, 1), nullptr);
  EXPECT_NE(frame.allocate(4, 1), nullptr);
  EXPECT_EQ(frame.allocate(1, 1), nullptr);
  EXPECT_EQ(frame.used(), 64u);
}

TEST(FrameAllocator, RejectsHugeSizesAndAlignmentsWithoutOverflow) {
  FrameAllocator frame(64);
  (void)frame.allocate(1, 1);
  EXPECT_EQ(frame.allocate(SIZE_MAX, 1), nullptr);
  EXPECT_EQ(frame.allocate(SIZE_MAX - 8, 16), nullptr);
  EXPECT_EQ(frame.allocate(1, std::size_t{1} << 63), nullptr);
  EXPECT_EQ(frame.allocate(8, 0), nullptr);
  EXPECT_EQ(frame.allocate(8, 24), nullptr);
  EXPECT_EQ(frame.used(), 1u);
}

TEST(FrameAllocator, ZeroCapacityAndZeroSizes) {
  FrameAllocator empty(0);
  EXPECT_NE(empty.allocate(0, 1), nullptr);
  EXPECT_EQ(empty.allocate(1, 1), nullptr);
  FrameAllocator frame(16);
  EXPECT_NE(frame.allocate(0), nullptr);
  EXPECT_EQ(frame.used(), 0u);
}

// The convention of every arena: without its memory, capacity 0 and every allocate nullptr.
// Capacities over PTRDIFF_MAX are refused without asking, as no pointer difference spans them.
TEST(FrameAllocator, AHugeCapacityIsCapacityZeroAndAllocatesNullptr) {
  for (const std::size_t huge : {std::size_t{SIZE_MAX}, std::size_t{PTRDIFF_MAX} + 1}) {
    FrameAllocator frame(huge);
    EXPECT_EQ(frame.capacity(), 0u);
    EXPECT_EQ(frame.allocate(1, 1), nullptr);
    EXPECT_EQ(frame.new_object<int>(1), nullptr);
    StackAllocator stack(huge);
    EXPECT_EQ(stack.capacity(), 0u);
    EXPECT_EQ(stack.allocate(1, 1), nullptr);
    DoubleBufferedFrameAllocator frames(huge);
    EXPECT_EQ(frames.capacity(), 0u);
    EXPECT_EQ(frames.allocate(1, 1), nullptr);
    frames.swap_buffers();
    EXPECT_EQ(frames.capacity(), 0u);
  }
}

TEST(FrameAllocator, ResetGivesEverythingBackAndKeepsThePeak) {
  FrameAllocator frame(256);
  void* first = frame.allocate(100, 1);
  (void)frame.allocate(50, 1);
  frame.reset();
  EXPECT_EQ(frame.used(), 0u);
  EXPECT_EQ(frame.allocate(10, 1), first);
  EXPECT_EQ(frame.peak(), 150u);
}

TEST(DoubleBufferedFrameAllocator, KeepsThePreviousFrameValidForOneMoreFrame) {
  DoubleBufferedFrameAllocator frames(64);
  auto* previous = static_cast<unsigned char*>(frames.allocate(64, 1));
  std::memset(previous, 0xAB, 64);
  frames.swap_buffers();
  auto* current = static_cast<unsigned char*>(frames.allocate(64, 1));
  ASSERT_NE(current, nullptr);
  std::memset(current, 0xCD, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(previous[i], 0xAB);
  EXPECT_EQ(frames.allocate(1, 1), nullptr);  // each frame has its own 64 bytes
  frames.swap_buffers();
  EXPECT_EQ(frames.used(), 0u);
  EXPECT_EQ(frames.allocate(64, 1), previous);  // the frame before last is reused
  for (int i = 0; i < 64; ++i) ASSERT_EQ(current[i], 0xCD);
  EXPECT_EQ(frames.capacity(), 64u);
  EXPECT_EQ(frames.peak(), 64u);
}

TEST(DoubleBufferedFrameAllocator, CountsTheCurrentFrameAndThePeakOfBoth) {
  DoubleBufferedFrameAllocator frames(1024);
  (void)frames.allocate(300, 1);
  frames.swap_buffers();
  (void)frames.allocate(100, 1);
  EXPECT_EQ(frames.used(), 100u);  // the frame before, 300 B, still held, is not counted
  EXPECT_EQ(frames.peak(), 300u);
  EXPECT_EQ(frames.capacity(), 1024u);  // of each frame
}

TEST(FrameAllocator, WorksOverCallerMemoryAndNeverFreesIt) {
  alignas(16) static std::byte buffer[256];
  FrameAllocator frame(buffer, sizeof buffer);
  EXPECT_EQ(frame.capacity(), 256u);
  EXPECT_EQ(frame.allocate(200, 16), buffer);
  EXPECT_EQ(frame.allocate(100, 1), nullptr);
  frame.reset();
  EXPECT_EQ(frame.allocate(256, 1), buffer);
}

TEST(FrameAllocator, OverANullBufferHoldsNothing) {
  FrameAllocator frame(nullptr, 1024);
  EXPECT_EQ(frame.capacity(), 0u);
  EXPECT_EQ(frame.allocate(1, 1), nullptr);
}

struct Vec3 {
  Vec3(float x, float y, float z) : x(x), y(y), z(z) {}
  float x, y, z;
};

struct alignas(32) Wide {
  int lanes[8];
};

TEST(FrameAllocator, NewObjectConstructsInPlaceWithTheTypesAlignment) {
  FrameAllocator frame(1024);
  (void)frame.allocate(1, 1);
  Vec3* v = frame.new_object<Vec3>(1.0f, 2.0f, 3.0f);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(aligned(v, alignof(Vec3)));
  EXPECT_EQ(v->y, 2.0f);
  Wide* w = frame.new_object<Wide>();
  EXPECT_TRUE(aligned(w, 32));
}

// As game math types usually are: no constructor, so T(args...) needs C++20's parenthesised
// aggregate initialisation, which clang before 16 lacks.
struct Aggregate {
  float x, y, z;
};

TEST(FrameAllocator, NewObjectBuildsAnAggregateFromItsMembers) {
  FrameAllocator frame(1024);
  DoubleBufferedFrameAllocator frames(1024);
  EXPECT_EQ(frame.new_object<Aggregate>(1.0f, 2.0f, 3.0f)->z, 3.0f);
  EXPECT_EQ(frames.new_object<Aggregate>(1.0f, 2.0f, 3.0f)->y, 2.0f);
}

TEST(FrameAllocator, NewArrayDefaultConstructsNElementsOrReturnsNullptr) {
  FrameAllocator frame(256);
  Wide* lanes = frame.new_array<Wide>(4);
  ASSERT_NE(lanes, nullptr);
  EXPECT_TRUE(aligned(lanes, 32));
  std::string* names = frame.new_array<std::string>(0);
  EXPECT_NE(names, nullptr);
  EXPECT_EQ(frame.new_array<Wide>(5), nullptr);             // 128 B used, 160 asked
  EXPECT_EQ(frame.new_array<Wide>(SIZE_MAX / 8), nullptr);  // n * sizeof(T) overflows
  EXPECT_EQ(frame.new_object<Wide>(), lanes + 4);
}

// Counts its constructions and destructions.
struct Tally {
  static inline int constructed = 0;
  static inline int destroyed = 0;
  Tally() { ++constructed; }
  ~Tally() { ++destroyed; }
};

TEST(FrameAllocator, NewArrayDefaultInitialisesEachElementAsNewDoes) {
  FrameAllocator frame(1024);
  std::string* names = frame.new_array<std::string>(3);
  ASSERT_NE(names, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(names[i], "");
  for (int i = 0; i < 3; ++i) std::destroy_at(&names[i]);
  Tally::constructed = 0;
  ASSERT_NE(frame.new_array<Tally>(5), nullptr);
  EXPECT_EQ(Tally::constructed, 5);
}

TEST(FrameAllocator, ResetRunsNoDestructors) {
  FrameAllocator frame(1024);
  Tally::destroyed = 0;
  ASSERT_NE(frame.new_object<Tally>(), nullptr);
  ASSERT_NE(frame.new_array<Tally>(4), nullptr);
  frame.reset();
  EXPECT_EQ(Tally::destroyed, 0);
}

struct ThrowingVec3 {
  ThrowingVec3() { throw std::runtime_error("constructor failed"); }
  float x, y, z;
};

TEST(FrameAllocator, AThrowingConstructorsMemoryStaysUsedUntilReset) {
  FrameAllocator frame(1024);
  EXPECT_THROW((void)frame.new_object<ThrowingVec3>(), std::runtime_error);
  EXPECT_EQ(frame.used(), sizeof(ThrowingVec3));
  frame.reset();
  EXPECT_EQ(frame.used(), 0u);
}

TEST(FrameAllocator, PrintsItsStateInOneLine) {
  FrameAllocator frame(1024);
  frame.set_name("scratch");
  (void)frame.allocate(300, 1);
  frame.reset();
  (void)frame.allocate(100, 1);
  std::ostringstream out;
  out << frame;
  EXPECT_EQ(out.str(), "FrameAllocator \"scratch\": 100 of 1024 B used, peak 300 B");
}

TEST(DoubleBufferedFrameAllocator, PrintsItsCurrentFrameInOneLine) {
  DoubleBufferedFrameAllocator frames(1024);
  frames.set_name("draw list");
  (void)frames.allocate(300, 1);
  frames.swap_buffers();
  (void)frames.allocate(100, 1);
  std::ostringstream out;
  out << frames;
  EXPECT_EQ(out.str(),
            "DoubleBufferedFrameAllocator, current frame: FrameAllocator \"draw list\": 100 of "
            "1024 B used, peak 100 B");
}

TEST(DoubleBufferedFrameAllocator, ConstructsObjectsInTheCurrentFrame) {
  DoubleBufferedFrameAllocator frames(64);
  int* a = frames.new_object<int>(1);
  frames.swap_buffers();
  int* b = frames.new_array<int>(16);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(frames.new_array<int>(1), nullptr);
}

TEST(FrameAllocator, AMoveTakesTheMemoryAndLeavesTheSourceEmpty) {
  FrameAllocator source(1024);
  void* first = source.allocate(100, 1);
  FrameAllocator frame(std::move(source));
  EXPECT_EQ(frame.capacity(), 1024u);
  EXPECT_EQ(frame.used(), 100u);
  EXPECT_EQ(source.capacity(), 0u);  // NOLINT(bugprone-use-after-move): what is left
  EXPECT_EQ(source.used(), 0u);
  EXPECT_EQ(source.allocate(1, 1), nullptr);
  EXPECT_EQ(source.allocate(0, 1), nullptr);
  frame.reset();
  EXPECT_EQ(frame.allocate(1, 1), first);
  EXPECT_EQ(frame.peak(), 100u);
}

TEST(FrameAllocator, MoveAssignmentTakesTheSourcesMemoryAndLeavesItEmpty) {
  FrameAllocator source(512);
  void* first = source.allocate(10, 1);
  FrameAllocator frame(1024);
  (void)frame.allocate(300, 1);
  frame = std::move(source);
  EXPECT_EQ(frame.capacity(), 512u);
  EXPECT_EQ(frame.used(), 10u);
  EXPECT_EQ(frame.peak(), 10u);
  EXPECT_EQ(source.capacity(), 0u);  // NOLINT(bugprone-use-after-move): what is left
  EXPECT_EQ(source.allocate(1, 1), nullptr);
  frame.reset();
  EXPECT_EQ(frame.allocate(1, 1), first);
}

TEST(DoubleBufferedFrameAllocator, AMoveTakesBothFramesAndLeavesTheSourceEmpty) {
  DoubleBufferedFrameAllocator source(64);
  auto* previous = static_cast<int*>(source.allocate(sizeof(int)));
  *previous = 7;
  source.swap_buffers();
  (void)source.allocate(16, 1);
  DoubleBufferedFrameAllocator frames(std::move(source));
  EXPECT_EQ(frames.used(), 16u);
  EXPECT_EQ(*previous, 7);
  EXPECT_EQ(source.capacity(), 0u);  // NOLINT(bugprone-use-after-move): what is left
  EXPECT_EQ(source.allocate(1, 1), nullptr);
  source.swap_buffers();
  EXPECT_EQ(source.allocate(1, 1), nullptr);
  frames.swap_buffers();
  EXPECT_EQ(frames.allocate(sizeof(int)), previous);
}

TEST(FrameAllocatorDebug, FillsWhatItHandsOutAndWhatResetGivesBack) {
  FrameAllocator frame(256, DebugChecks::on);
  EXPECT_TRUE(frame.debug_checks());
  EXPECT_FALSE(FrameAllocator(256).debug_checks());
  auto* block = static_cast<unsigned char*>(frame.allocate(64, 1));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(block[i], 0xA5);
  frame.reset();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(read_given_back(block + i), 0x5A);
}

using FrameAllocatorDeathTest = ::testing::Test;

TEST_F(FrameAllocatorDeathTest, AWriteThroughAPointerFromBeforeResetIsReportedWhenHandedOutAgain) {
  FrameAllocator frame(1024, DebugChecks::on);
  auto* stale = static_cast<unsigned char*>(frame.allocate(64, 1));
  frame.reset();
  write_given_back(stale + 10, 1);
  EXPECT_DEATH((void)frame.allocate(64, 1),
               "^poolalloc: FrameAllocator 0x\\w+ \\(0 of 1024 B used\\): allocate found " +
                   death_test_hex(stale + 10) + " written after it was given back");
}

TEST_F(FrameAllocatorDeathTest, AWriteAfterResetIsUseAfterPoisonUnderAddressSanitizer) {
  if (!poolalloc::detail::kAddressSanitizer) GTEST_SKIP() << "a test of AddressSanitizer builds";
  FrameAllocator frame(1024);
  auto* stale = static_cast<volatile unsigned char*>(frame.allocate(64));
  frame.reset();
  EXPECT_DEATH(stale[0] = 1, "use-after-poison");
  ASSERT_EQ(frame.allocate(64), stale);
  stale[63] = 1;  // handed out again: the caller's
}

TEST(DoubleBufferedFrameAllocatorDebug, ChecksBothFrames) {
  DoubleBufferedFrameAllocator frames(64, DebugChecks::on);
  EXPECT_TRUE(frames.debug_checks());
  auto* previous = static_cast<unsigned char*>(frames.allocate(8, 1));
  frames.swap_buffers();
  EXPECT_EQ(*previous, 0xA5);  // kept one frame more
  frames.swap_buffers();
  EXPECT_EQ(read_given_back(previous), 0x5A);
}

}  // namespace
