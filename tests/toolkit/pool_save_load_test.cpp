// Pool<T>::spawn_at: a pool rebuilt from saved handles, in which every saved handle resolves.
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace {

using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

struct Unit {
  explicit Unit(int v) : value(v) {}
  Unit(Unit&&) noexcept = default;
  int value;
  Handle<Unit> target;
};

struct Saved {
  std::uint64_t handle;
  int value;
  std::uint64_t target;
  int target_value;  // -1: no target
};

// A level whose ids and slots differ (a compaction moved its objects), saved as packed handles.
std::vector<Saved> save_a_level() {
  Pool<Unit> pool(16, Growth::growable);
  std::vector<Unit*> units;
  for (int i = 0; i < 100; ++i) units.push_back(pool.spawn(i));
  for (int i = 0; i < 100; i += 3) pool.despawn(units[i]);
  EXPECT_GT(pool.compact(), 0u);
  Unit* previous = nullptr;
  for (Unit& unit : pool) {
    if (previous != nullptr) unit.target = pool.handle_of(previous);
    previous = &unit;
  }
  std::vector<Saved> saved;
  pool.each([&](Handle<Unit> handle, const Unit& unit) {
    const Unit* target = pool.get(unit.target);
    saved.push_back(
        {handle.packed(), unit.value, unit.target.packed(), target ? target->value : -1});
  });
  return saved;
}

TEST(PoolSaveLoad, EverySavedHandleResolvesInAPoolRebuiltBySpawnAt) {
  const std::vector<Saved> saved = save_a_level();
  Pool<Unit> loaded(0, Growth::growable);
  for (const Saved& s : saved) {
    Unit* unit = loaded.spawn_at(Handle<Unit>::from_packed(s.handle), s.value);
    ASSERT_NE(unit, nullptr);
    unit->target = Handle<Unit>::from_packed(s.target);
  }
  EXPECT_EQ(loaded.size(), saved.size());
  for (const Saved& s : saved) {
    const Unit* unit = loaded.get(Handle<Unit>::from_packed(s.handle));
    ASSERT_NE(unit, nullptr);
    EXPECT_EQ(unit->value, s.value);
    EXPECT_EQ(loaded.handle_of(unit).packed(), s.handle);
    if (s.target_value >= 0) {  // a reference by handle finds the object it found when saved
      ASSERT_NE(loaded.get(unit->target), nullptr);
      EXPECT_EQ(loaded.get(unit->target)->value, s.target_value);
    }
  }
}

TEST(PoolSaveLoad, SpawnAtReturnsNullptrForAnIdTakenAndForADefaultHandle) {
  Pool<Unit> pool(8);
  const Handle<Unit> live = pool.handle_of(pool.spawn(1));
  EXPECT_EQ(pool.spawn_at(live, 2), nullptr);  // the id's object lives
  EXPECT_EQ(pool.spawn_at(Handle<Unit>::from_packed(live.packed() + 1), 2), nullptr);
  EXPECT_EQ(pool.spawn_at(Handle<Unit>(), 2), nullptr);
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.get(live)->value, 1);
}

TEST(PoolSaveLoad, SpawnAtBeyondAFixedPoolReturnsNullptrAndAGrowablePoolGrowsToTheId) {
  const Handle<Unit> far = Handle<Unit>::from_packed(std::uint64_t{1000} << 32 | 7);
  Pool<Unit> fixed(8);
  EXPECT_EQ(fixed.spawn_at(far, 1), nullptr);
  EXPECT_EQ(fixed.capacity(), 8u);
  Pool<Unit> growable(8, Growth::growable);
  Unit* unit = growable.spawn_at(far, 1);
  ASSERT_NE(unit, nullptr);
  EXPECT_GE(growable.capacity(), 1001u);
  EXPECT_EQ(growable.get(far), unit);
  EXPECT_EQ(growable.handle_of(unit), far);
}

// Ids stop below 2^31 (a slot's stamp keeps the top bit of its id's half): no pool grows to one.
TEST(PoolSaveLoad, SpawnAtAnIdOfTwoToThe31OrAboveReturnsNullptrAndLeavesThePoolAsItWas) {
  Pool<Unit> pool(8, Growth::growable);
  for (std::uint64_t id :
       {std::uint64_t{1} << 31, (std::uint64_t{1} << 31) + 3, std::uint64_t{UINT32_MAX} - 1}) {
    const Handle<Unit> beyond = Handle<Unit>::from_packed(id << 32 | 7);
    EXPECT_EQ(pool.spawn_at(beyond, 1), nullptr);
    EXPECT_EQ(pool.get(beyond), nullptr);
  }
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(PoolSaveLoad, SpawnsAfterALoadTakeTheFreeSlotsAndGiveHandlesThatDifferFromTheLoadedOnes) {
  Pool<Unit> pool(8);
  const Handle<Unit> saved = Handle<Unit>::from_packed(std::uint64_t{3} << 32 | 42);
  ASSERT_NE(pool.spawn_at(saved, 3), nullptr);
  std::vector<Handle<Unit>> spawned;
  for (int i = 0; i < 7; ++i) spawned.push_back(pool.handle_of(pool.spawn(i)));
  EXPECT_EQ(pool.spawn(9), nullptr);  // full: the loaded object kept its slot
  for (const Handle<Unit> h : spawned) EXPECT_NE(h.id(), 3u);
  EXPECT_EQ(pool.get(saved)->value, 3);
  pool.despawn(saved);
  EXPECT_EQ(pool.get(saved), nullptr);
  const Handle<Unit> next = pool.handle_of(pool.spawn(4));  // the id's next generation
  EXPECT_EQ(next.id(), 3u);
  EXPECT_NE(next, saved);
  EXPECT_EQ(pool.get(saved), nullptr);
}

TEST(PoolSaveLoad, SpawnAtReachesTheIdOfASlotAShrinkTookAway) {
  Pool<Unit> pool(4, Growth::growable);
  std::vector<Handle<Unit>> handles;
  for (int i = 0; i < 10; ++i) handles.push_back(pool.handle_of(pool.spawn(i)));
  for (int i = 4; i < 10; ++i) pool.despawn(handles[i]);
  ASSERT_GT(pool.shrink(), 0u);
  ASSERT_EQ(pool.capacity(), 4u);
  Unit* back = pool.spawn_at(handles[9], 9);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(pool.get(handles[9]), back);
  EXPECT_EQ(pool.get(handles[8]), nullptr);  // the same generation, but not loaded
}

struct Fragile {
  explicit Fragile(bool fails) {
    if (fails) throw std::runtime_error("constructor failed");
  }
};

TEST(PoolSaveLoad, ASpawnAtWhoseConstructorThrowsLeavesTheIdFreeAndTheHandleUnresolved) {
  Pool<Fragile> pool(4);
  const Handle<Fragile> saved = Handle<Fragile>::from_packed(std::uint64_t{2} << 32 | 5);
  EXPECT_THROW((void)pool.spawn_at(saved, true), std::runtime_error);
  EXPECT_EQ(pool.get(saved), nullptr);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_NE(pool.spawn_at(saved, false), nullptr);
  EXPECT_NE(pool.get(saved), nullptr);
}

}  // namespace

namespace {

// With debug checks, the slots that spawn_at stamps below its id (never used) get the fill pattern
// that a spawn into them checks: they are taken without a report, and a write after a despawn is
// still caught.
TEST(PoolSaveLoad, WithDebugChecksTheSlotsBelowASpawnAtAreTakenWithoutAReport) {
  Pool<Unit> saved(16);
  Pool<Unit> pool(16, Growth::fixed, poolalloc::DebugChecks::on);
  std::vector<Handle<Unit>> handles;
  for (int i = 0; i < 11; ++i) handles.push_back(saved.handle_of(saved.spawn(i)));
  ASSERT_NE(pool.spawn_at(handles[10], 10), nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_NE(pool.spawn(i), nullptr);  // slots 0 to 9
  EXPECT_EQ(pool.size(), 11u);
  Unit* last = pool.get(handles[10]);
  pool.despawn(last);
  EXPECT_DEATH(
      {
        last->value = 7;  // NOLINT(clang-analyzer-cplusplus.NewDelete): a write after despawn
        (void)pool.spawn(1);
      },
      "the slot was written after its object was despawned");
}

}  // namespace
