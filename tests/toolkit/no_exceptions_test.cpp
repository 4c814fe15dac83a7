// The toolkit built with exceptions off (this file is compiled with -fno-exceptions), as many
// game engines build: its headers compile, its allocators work, and what would throw reports and
// aborts. An executable of its own, since it replaces the global operator new to fail on demand.
#include <poolalloc/toolkit.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__cpp_exceptions)
#error "this test is meant to be built with exceptions off"
#endif

namespace {

// While true, the form of operator new that the pools take their chunks with gives nullptr.
bool chunks_fail = false;

}  // namespace

// Forwards to the aligned operator new, whose memory the standard aligned operator delete gives
// back, as the standard nothrow form does.
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return chunks_fail ? nullptr : ::operator new(bytes, alignment);
}

namespace {

using poolalloc::FixedPool;
using poolalloc::FrameAllocator;
using poolalloc::FrameResource;
using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;
using poolalloc::PoolResource;
using poolalloc::StackAllocator;
using poolalloc::StackResource;
using poolalloc::StlAllocator;

// As far as the compiler knows, its constructor may throw: spawn takes the path that would give
// the slot back, which must build without exceptions.
struct Unit {
  explicit Unit(int health) : health(health) { ++alive; }
  Unit(const Unit&) = delete;
  Unit& operator=(const Unit&) = delete;
  ~Unit() { --alive; }
  int health;
  static inline int alive = 0;
};
static_assert(!std::is_nothrow_constructible_v<Unit, int>);

TEST(NoExceptions, APoolSpawnsDespawnsClearsAndRunsOutOfSlots) {
  Pool<Unit> units(2);
  Unit* first = units.spawn(10);
  ASSERT_NE(first, nullptr);
  const Handle<Unit> second = units.handle_of(units.spawn(20));
  EXPECT_EQ(units.spawn(30), nullptr);  // out of slots
  EXPECT_EQ(units.size(), 2u);
  EXPECT_EQ(units.get(second)->health, 20);
  units.despawn(first);
  EXPECT_EQ(Unit::alive, 1);
  ASSERT_NE(units.spawn(40), nullptr);
  units.clear();
  EXPECT_EQ(units.size(), 0u);
  EXPECT_EQ(Unit::alive, 0);
  EXPECT_EQ(units.get(second), nullptr);
}

TEST(NoExceptions, AGrowablePoolAddsChunksAndKeepsItsObjects) {
  Pool<Unit> units(1, Growth::growable);
  std::vector<Unit*> spawned;
  for (int i = 0; i < 200; ++i) spawned.push_back(units.spawn(i));
  EXPECT_EQ(units.chunk_count(), 3u);  // 1, 127 (up to 128) and 128 slots
  for (int i = 0; i < 200; ++i) EXPECT_EQ(spawned[i]->health, i);
  units.clear();
}

TEST(NoExceptions, APoolWhoseSlotsCannotBeHadHasCapacityZeroAndSpawnsNullptr) {
  chunks_fail = true;
  Pool<Unit> units(8, Growth::growable_from_new);
  EXPECT_EQ(units.capacity(), 0u);
  EXPECT_EQ(units.spawn(1), nullptr);
  chunks_fail = false;
  ASSERT_NE(units.spawn(2), nullptr);
  EXPECT_EQ(units.capacity(), 64u);
  units.clear();
}

TEST(NoExceptions, AFixedPoolWhoseChunkCannotBeHadIsNotCreatedAndAllocatesNullptr) {
  chunks_fail = true;
  FixedPool refused;
  EXPECT_FALSE(refused.create(64, 8));
  FixedPool bullets(64, 1, 16, Growth::growable);
  chunks_fail = false;
  EXPECT_EQ(bullets.capacity(), 0u);
  ASSERT_TRUE(bullets.create(64, 1, 16, Growth::growable));
  void* first = bullets.allocate();
  chunks_fail = true;
  EXPECT_EQ(bullets.allocate(), nullptr);
  chunks_fail = false;
  void* second = bullets.allocate();
  EXPECT_NE(second, nullptr);
  bullets.deallocate(second);
  bullets.deallocate(first);
}

// Without exceptions too, an arena without its memory has capacity 0 and allocates nullptr: a
// huge frame neither throws nor ends the program.
TEST(NoExceptions, FrameAndStackAllocatorsWithoutTheirMemoryHaveCapacityZero) {
  FrameAllocator huge(SIZE_MAX);
  EXPECT_EQ(huge.capacity(), 0u);
  chunks_fail = true;
  FrameAllocator frame(1024);
  StackAllocator stack(1024);
  poolalloc::DoubleBufferedFrameAllocator frames(1024);
  chunks_fail = false;
  EXPECT_EQ(frame.capacity(), 0u);
  EXPECT_EQ(frame.allocate(1), nullptr);
  EXPECT_EQ(stack.capacity(), 0u);
  EXPECT_EQ(stack.allocate(1), nullptr);
  EXPECT_EQ(frames.capacity(), 0u);
  EXPECT_EQ(frames.allocate(1), nullptr);
}

// Its move constructor may throw, as far as the compiler knows: compact() takes the path that
// would undo a move, which must build without exceptions.
struct Movable {
  explicit Movable(int id) : id(id) {}
  Movable(Movable&& other) : id(other.id) {}
  int id;
};
static_assert(!std::is_nothrow_move_constructible_v<Movable>);

TEST(NoExceptions, APoolCompacts) {
  Pool<Movable> pool(4);
  Movable* hole = pool.spawn(1);
  const Handle<Movable> moving = pool.handle_of(pool.spawn(2));
  pool.despawn(hole);
  EXPECT_EQ(pool.compact(), 1u);
  EXPECT_EQ(pool.get(moving), hole);
  EXPECT_EQ(pool.get(moving)->id, 2);
}

TEST(NoExceptions, AFixedPoolHandsOutEachBlockOnceUntilItIsFull) {
  FixedPool pool(32, 2);
  void* a = pool.allocate();
  void* b = pool.allocate();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.allocate(), nullptr);
  pool.deallocate(a);
  EXPECT_EQ(pool.allocate(), a);
  pool.deallocate(a);
  pool.deallocate(b);
}

TEST(NoExceptions, FrameAndStackAllocatorsServeUntilFullAndGiveBackAtOnce) {
  FrameAllocator frame(64);
  ASSERT_NE(frame.allocate(48, 16), nullptr);
  EXPECT_EQ(frame.allocate(32, 16), nullptr);
  frame.reset();
  EXPECT_EQ(frame.used(), 0u);
  EXPECT_NE(frame.allocate(64, 16), nullptr);

  StackAllocator stack(64);
  (void)stack.allocate(16, 1);
  const auto marker = stack.marker();
  ASSERT_NE(stack.allocate(48, 1), nullptr);
  EXPECT_EQ(stack.allocate(1, 1), nullptr);
  stack.free_to_marker(marker);
  EXPECT_EQ(stack.used(), 16u);
}

TEST(NoExceptions, APoolResourceBacksPmrContainers) {
  PoolResource resource;
  std::pmr::vector<std::uint64_t> values(&resource);
  for (std::uint64_t i = 0; i < 20; ++i) values.push_back(i);
  EXPECT_EQ(values[19], 19u);
  EXPECT_EQ(resource.used(), values.capacity() * sizeof(std::uint64_t));
}

TEST(NoExceptionsDeathTest, APoolResourceOutOfMemoryReportsAndAborts) {
  PoolResource resource;
  EXPECT_DEATH(
      {
        chunks_fail = true;
        (void)resource.allocate(8);
      },
      "poolalloc::PoolResource: out of memory for a block");
}

TEST(NoExceptionsDeathTest, APoolResourceOfChunksItCouldNeverHaveReportsAndAborts) {
  EXPECT_DEATH(PoolResource(256, 0), "poolalloc::PoolResource: blocks_per_chunk is 0");
  EXPECT_DEATH(PoolResource(256, SIZE_MAX), "blocks_per_chunk makes chunks over 4 GiB");
}

TEST(NoExceptionsDeathTest, AFrameOrStackResourceWhoseArenaIsFullReportsAndAborts) {
  FrameAllocator frame(64);
  FrameResource per_frame(frame);
  EXPECT_DEATH((void)per_frame.allocate(128), "ArenaResource.*its arena is full");
  StackAllocator stack(64);
  StackResource per_level(stack);
  EXPECT_DEATH((void)per_level.allocate(128), "ArenaResource.*its arena is full");
}

TEST(NoExceptionsDeathTest, AnStlAllocatorWhoseArenaCannotServeReportsAndAborts) {
  FixedPool pool(8, 1);
  StlAllocator<std::uint64_t, FixedPool> words(pool);
  std::uint64_t* only = words.allocate(1);
  EXPECT_DEATH((void)words.allocate(1), "poolalloc::StlAllocator: its arena cannot serve");
  words.deallocate(only, 1);
  FrameAllocator frame(64);
  StlAllocator<std::uint64_t, FrameAllocator> counts(frame);
  EXPECT_DEATH((void)counts.allocate(SIZE_MAX / 4), "poolalloc::StlAllocator: the size overflows");
}

}  // namespace
