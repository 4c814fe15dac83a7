// Pool<T>: objects whose constructors and destructors use their own pool, and the pool's end.
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "address_text.hpp"

namespace {

using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

// A shell that leaves a fragment in its pool when it dies, as long as it has fragments left.
struct Shell {
  static inline int built = 0;
  static inline int destroyed = 0;
  static inline int built_over_the_dying = 0;  // spawns that got the dying shell's own slot
  Shell(Pool<Shell>& pool, int fragments) : pool(pool), fragments(fragments) { ++built; }
  ~Shell() {
    ++destroyed;
    if (fragments > 0 && pool.spawn(pool, fragments - 1) == this) ++built_over_the_dying;
  }
  Pool<Shell>& pool;
  int fragments;
};

TEST(PoolLifetime, DestroyingThePoolDestroysWhatItsDestructorsSpawn) {
  Shell::built = Shell::destroyed = Shell::built_over_the_dying = 0;
  {
    Pool<Shell> pool(8);
    (void)pool.spawn(pool, 2);  // leaves a fragment that leaves a fragment
    (void)pool.spawn(pool, 0);
  }
  EXPECT_EQ(Shell::built, 4);
  EXPECT_EQ(Shell::destroyed, 4);
  EXPECT_EQ(Shell::built_over_the_dying, 0);
}

TEST(PoolLifetime, ClearDestroysEveryObjectAndWhatItsDestructorsSpawn) {
  Shell::built = Shell::destroyed = Shell::built_over_the_dying = 0;
  Pool<Shell> pool(8);
  (void)pool.spawn(pool, 0);
  (void)pool.spawn(pool, 3);
  pool.clear();
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(Shell::built, 5);
  EXPECT_EQ(Shell::destroyed, 5);
  EXPECT_EQ(Shell::built_over_the_dying, 0);
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_NE(pool.spawn(pool, 0), nullptr);  // the pool goes on
}

// A parent that owns its child through a handle.
struct Parent {
  explicit Parent(Pool<Parent>& pool) : pool(pool) {}
  ~Parent() {
    ++destroyed;
    pool.despawn(child);
  }
  static inline int destroyed = 0;
  Pool<Parent>& pool;
  Handle<Parent> child;
};

TEST(PoolLifetime, DestroyingThePoolDestroysEachObjectOnceWhenObjectsOwnOthersByHandle) {
  Parent::destroyed = 0;
  {
    Pool<Parent> pool(4);
    Parent* placeholder = pool.spawn(pool);
    Parent* parent = pool.spawn(pool);  // slot 1
    pool.despawn(placeholder);
    parent->child = pool.handle_of(pool.spawn(pool));  // slot 0: the walk meets the child first
  }
  EXPECT_EQ(Parent::destroyed, 3);  // the placeholder, then the child and the parent once each
}

TEST(PoolLifetime, ClearDestroysEachObjectOnceWhenObjectsOwnOthersByHandle) {
  Parent::destroyed = 0;
  Pool<Parent> pool(4);
  Parent* parent = pool.spawn(pool);
  parent->child = pool.handle_of(pool.spawn(pool));  // slot 1: the walk meets the parent first
  Parent* child = pool.get(parent->child);
  child->child = pool.handle_of(pool.spawn(pool));
  pool.clear();
  EXPECT_EQ(Parent::destroyed, 3);
  EXPECT_EQ(pool.size(), 0u);
}

// Two objects that own each other (by handle), and one that despawns itself when it dies: a
// despawn of an object whose destructor is running is ignored, so each dies once.
TEST(PoolLifetime, ADespawnOfAnObjectWhoseDestructorIsRunningIsIgnored) {
  Parent::destroyed = 0;
  Pool<Parent> pool(4);
  Parent* first = pool.spawn(pool);
  Parent* second = pool.spawn(pool);
  first->child = pool.handle_of(second);
  second->child = pool.handle_of(first);
  pool.despawn(first);
  EXPECT_EQ(Parent::destroyed, 2);
  EXPECT_EQ(pool.size(), 0u);

  Parent* itself = pool.spawn(pool);
  itself->child = pool.handle_of(itself);
  pool.despawn(pool.handle_of(itself));
  EXPECT_EQ(Parent::destroyed, 3);
  EXPECT_EQ(pool.size(), 0u);
}

// The same by pointer, while the pool clears: a cycle of three.
struct Link {
  explicit Link(Pool<Link>& pool) : pool(pool) {}
  ~Link() {
    ++destroyed;
    pool.despawn(next);
  }
  static inline int destroyed = 0;
  Pool<Link>& pool;
  Link* next = nullptr;
};

TEST(PoolLifetime, ObjectsThatOwnEachOtherInACycleDieOnceInDespawnAndClear) {
  Link::destroyed = 0;
  Pool<Link> pool(8);
  for (int round = 0; round < 2; ++round) {
    Link* a = pool.spawn(pool);
    Link* b = pool.spawn(pool);
    Link* c = pool.spawn(pool);
    a->next = b;
    b->next = c;
    c->next = a;
    if (round == 0) {
      pool.despawn(b);
    } else {
      pool.clear();
    }
    EXPECT_EQ(Link::destroyed, 3 * (round + 1));
    EXPECT_EQ(pool.size(), 0u);
  }
}

TEST(PoolLifetime, DespawnOfADefaultHandleIsIgnored) {
  Pool<Parent> pool(4);
  Parent* parent = pool.spawn(pool);
  pool.despawn(Handle<Parent>{});
  EXPECT_EQ(pool.size(), 1u);
  pool.despawn(parent);  // its child handle is the default one
  EXPECT_EQ(pool.size(), 0u);
}

// Takes its own handle in its constructor, as an entity registering itself does.
struct SelfAware {
  SelfAware(Pool<SelfAware>& pool, Handle<SelfAware>* out, bool fail) : self(pool.handle_of(this)) {
    if (out != nullptr) *out = self;
    if (fail) throw std::runtime_error("constructor failed");
  }
  Handle<SelfAware> self;
};

TEST(PoolLifetime, AHandleTakenInTheConstructorResolvesOnceSpawnReturns) {
  Pool<SelfAware> pool(4);
  SelfAware* object = pool.spawn(pool, nullptr, false);
  EXPECT_EQ(pool.get(object->self), object);
  EXPECT_EQ(pool.handle_of(object), object->self);
}

TEST(PoolLifetime, AHandleTakenInAConstructorThatThrowsNeverResolves) {
  Pool<SelfAware> pool(1);
  Handle<SelfAware> failed;
  EXPECT_THROW((void)pool.spawn(pool, &failed, true), std::runtime_error);
  EXPECT_EQ(pool.get(failed), nullptr);
  SelfAware* object = pool.spawn(pool, nullptr, false);  // the same slot
  EXPECT_EQ(pool.get(failed), nullptr);
  EXPECT_EQ(pool.get(object->self), object);
}

struct Small {
  int value = 0;
};

TEST(PoolShrink, GivesBackTheTrailingChunksWithNoLiveObjectAndGrowsAgain) {
  Pool<Small> pool(16, Growth::growable);
  std::vector<Small*> all;
  for (int i = 0; i < 200; ++i) all.push_back(pool.spawn(Small{i}));
  ASSERT_EQ(pool.capacity(), 256u);  // 16, 112 (up to 128), 128
  for (int i = 20; i < 200; ++i) pool.despawn(all[i]);
  EXPECT_EQ(pool.shrink(),
            128 * Pool<Small>::slot_bytes());  // the chunk of 128: slot 19 is in the second
  EXPECT_EQ(pool.capacity(), 128u);
  EXPECT_EQ(pool.chunk_count(), 2u);
  EXPECT_EQ(pool.size(), 20u);
  for (int i = 20; i < 200; ++i) ASSERT_NE(pool.spawn(Small{i}), nullptr);
  EXPECT_EQ(pool.capacity(), 256u);
  int expected = 0;
  for (Small& s : pool) ASSERT_EQ(s.value, expected++);
  EXPECT_EQ(pool.shrink(), 0u);
}

TEST(PoolShrink, KeepsTheFirstChunk) {
  Pool<Small> pool(16);
  EXPECT_EQ(pool.shrink(), 0u);
  EXPECT_EQ(pool.capacity(), 16u);
}

TEST(PoolShrink, AHandleOfAnObjectInAChunkGivenBackStaysStaleWhenItsSlotReturns) {
  Pool<Small> pool(4, Growth::growable);
  std::vector<Handle<Small>> handles;
  for (int i = 0; i < 8; ++i) handles.push_back(pool.handle_of(pool.spawn()));
  for (int i = 4; i < 8; ++i) pool.despawn(handles[i]);
  EXPECT_EQ(pool.shrink(),
            124 * Pool<Small>::slot_bytes());  // the chunk grown after the first, up to 128
  for (int i = 4; i < 8; ++i) EXPECT_EQ(pool.get(handles[i]), nullptr);
  for (int i = 4; i < 8; ++i) {
    const Handle<Small> again = pool.handle_of(pool.spawn());
    EXPECT_EQ(again.id(), handles[i].id());  // the same slot
    EXPECT_EQ(pool.get(handles[i]), nullptr);
  }
}

// Compaction moves the ids of the first chunk's dead objects into the second chunk's slots: a
// shrink that gives that chunk back keeps their generations, so that their handles stay stale.
TEST(PoolShrink, HandlesOfIdsThatCompactionMovedIntoAChunkGivenBackStayStale) {
  Pool<Small> pool(4, Growth::growable);
  std::vector<Handle<Small>> handles;
  for (int i = 0; i < 8; ++i) handles.push_back(pool.handle_of(pool.spawn(Small{i})));
  for (int i = 0; i < 4; ++i) pool.despawn(handles[i]);
  ASSERT_EQ(pool.compact(), 4u);  // slots 7, 6, 5, 4 into 0, 1, 2, 3: ids 0-3 go to slots 7-4
  EXPECT_EQ(pool.shrink(), 124 * Pool<Small>::slot_bytes());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool.get(handles[i]), nullptr);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(pool.get(handles[i])->value, i);
  std::vector<Handle<Small>> later;
  for (int i = 0; i < 4; ++i) later.push_back(pool.handle_of(pool.spawn(Small{10 + i})));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(later[i].id(), handles[3 - i].id());  // slot 4 + i holds id 3 - i, as before
    EXPECT_NE(later[i], handles[3 - i]);
    EXPECT_EQ(pool.get(handles[3 - i]), nullptr);
    EXPECT_EQ(pool.get(later[i])->value, 10 + i);
  }
  for (int i = 4; i < 8; ++i) EXPECT_EQ(pool.get(handles[i])->value, i);
}

TEST(PoolHandle, AHandleRebuiltFromItsPackedBitsFindsItsObject) {
  Pool<Small> pool(8);
  Small* object = pool.spawn(Small{5});
  const Handle<Small> handle = pool.handle_of(object);
  const Handle<Small> rebuilt = Handle<Small>::from_packed(handle.packed());
  EXPECT_EQ(rebuilt, handle);
  EXPECT_EQ(pool.get(rebuilt), object);
  pool.despawn(rebuilt);
  EXPECT_EQ(pool.get(Handle<Small>::from_packed(handle.packed())), nullptr);
  EXPECT_EQ(Handle<Small>::from_packed(Handle<Small>().packed()), Handle<Small>());
}

TEST(PoolHandle, AHandleFromForgedBitsFindsNothing) {
  Pool<Small> pool(8);
  for (int i = 0; i < 8; ++i) (void)pool.spawn();
  const std::uint64_t live = pool.handle_of(&*pool.begin()).packed();
  for (std::uint64_t bits :
       {std::uint64_t{0}, ~std::uint64_t{0}, std::uint64_t{7} << 32, std::uint64_t{1000} << 32 | 1,
        live + 1, live ^ (std::uint64_t{1} << 40)}) {
    EXPECT_EQ(pool.get(Handle<Small>::from_packed(bits)), nullptr) << bits;
  }
}

struct Alive {
  static inline int alive = 0;
  explicit Alive(int v) : value(v) { ++alive; }
  Alive(const Alive&) = delete;
  ~Alive() { --alive; }
  int value;
};

TEST(PoolMove, PointersAndHandlesStayValidInAVectorOfPools) {
  std::vector<Pool<Alive>> pools;
  std::vector<Alive*> objects;
  std::vector<Handle<Alive>> handles;
  for (int i = 0; i < 20; ++i) {  // the vector moves its pools as it grows
    pools.emplace_back(4);
    objects.push_back(pools.back().spawn(i));
    handles.push_back(pools.back().handle_of(objects.back()));
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(pools[i].get(handles[i]), objects[i]);
    EXPECT_EQ(objects[i]->value, i);
  }
  pools.clear();
  EXPECT_EQ(Alive::alive, 0);
}

TEST(PoolMove, TheMovedFromPoolIsEmptyAndUsable) {
  Pool<Alive> from(4, Growth::growable);
  Alive* object = from.spawn(1);
  const Handle<Alive> handle = from.handle_of(object);
  Pool<Alive> to(std::move(from));
  EXPECT_EQ(to.get(handle), object);
  EXPECT_EQ(to.size(), 1u);
  EXPECT_EQ(to.capacity(), 4u);
  EXPECT_EQ(from.size(), 0u);
  EXPECT_EQ(from.capacity(), 0u);
  EXPECT_EQ(from.get(handle), nullptr);
  Alive* again = from.spawn(2);  // grows again
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(from.get(handle), nullptr);
  EXPECT_EQ(to.get(from.handle_of(again)), nullptr);
  EXPECT_EQ(Alive::alive, 2);
}

TEST(PoolMove, MoveAssignmentDestroysWhatThePoolHeldAndTakesTheOther) {
  Pool<Alive> kept(4);
  (void)kept.spawn(1);
  (void)kept.spawn(2);
  Pool<Alive> other(8);
  Alive* object = other.spawn(3);
  kept = std::move(other);
  EXPECT_EQ(Alive::alive, 1);
  EXPECT_EQ(kept.capacity(), 8u);
  EXPECT_EQ(&*kept.begin(), object);
  kept.despawn(object);
}

using PoolMoveDeathTest = ::testing::Test;

TEST_F(PoolMoveDeathTest, AUniquePtrOfAPoolMovedAwayIsReportedWhenItDespawns) {
  Pool<Small> from(4);
  auto owned = from.make_unique();
  Pool<Small> to(std::move(from));
  EXPECT_DEATH(owned.reset(), "despawn of " + death_test_hex(owned.get()) + " outside the pool");
  to.despawn(owned.release());
}

}  // namespace
