// Pool<T>: what move assignment, clear() and compact() promise to objects whose constructors and
// destructors use their own pool.
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "address_text.hpp"

namespace {

using poolalloc::DebugChecks;
using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

// Owns a child by UniquePtr and another by handle, and may leave a fragment in its pool.
struct Node {
  static inline int destroyed = 0;
  static inline int fragments_spawned = 0;
  explicit Node(Pool<Node>& pool, int level = 0)
      : pool(&pool), level(level), child{nullptr, {&pool}} {}
  ~Node() {
    ++destroyed;
    pool->despawn(held);
    if (leaves_fragment && pool->spawn(*pool, -1) != nullptr) ++fragments_spawned;
  }
  Pool<Node>* pool;
  int level;
  Pool<Node>::UniquePtr child;
  Handle<Node> held;
  bool leaves_fragment = false;
};

TEST(PoolMove, MoveAssignmentDestroysTheObjectsInThePoolTheyLivedIn) {
  Node::destroyed = Node::fragments_spawned = 0;
  Pool<Node> level(8);
  Node* parent = level.spawn(level, 1);
  parent->child = level.make_unique(level, 1);
  parent->held = level.handle_of(level.spawn(level, 1));
  parent->leaves_fragment = true;
  Pool<Node> next(8);
  Node* kept = next.spawn(level, 2);  // its destructor will see the pool it ends up in
  level = std::move(next);
  EXPECT_EQ(Node::destroyed, 4);  // the parent, its two children and the fragment
  EXPECT_EQ(Node::fragments_spawned, 1);
  ASSERT_EQ(level.size(), 1u);
  EXPECT_EQ(&*level.begin(), kept);
  EXPECT_EQ(level.begin()->level, 2);
}

// Clears its pool when it dies: a level's end trigger.
struct Trigger {
  static inline int destroyed = 0;
  explicit Trigger(Pool<Trigger>& pool, bool clears) : pool(pool), clears(clears) {}
  ~Trigger() {
    ++destroyed;
    if (clears) pool.clear();
  }
  Pool<Trigger>& pool;
  bool clears;
};

TEST(PoolLifetime, ADestructorThatClearsThePoolDestroysTheOthersAndDiesOnce) {
  Trigger::destroyed = 0;
  {
    Pool<Trigger> pool(8);
    Trigger* trigger = pool.spawn(pool, true);
    (void)pool.spawn(pool, false);
    (void)pool.spawn(pool, false);
    pool.despawn(trigger);
    EXPECT_EQ(Trigger::destroyed, 3);
    EXPECT_EQ(pool.size(), 0u);
  }
  EXPECT_EQ(Trigger::destroyed, 3);
}

TEST(PoolLifetime, ADestructorThatClearsThePoolDuringClearEndsWithThePoolEmpty) {
  Trigger::destroyed = 0;
  Pool<Trigger> pool(8);
  (void)pool.spawn(pool, false);
  (void)pool.spawn(pool, true);
  (void)pool.spawn(pool, false);
  pool.clear();
  EXPECT_EQ(Trigger::destroyed, 3);
  EXPECT_EQ(pool.size(), 0u);
}

// Counts what for_each shows it from its destructor.
struct Counter {
  static inline int seen_from_destructor = 0;
  explicit Counter(Pool<Counter>& pool) : pool(pool) {}
  ~Counter() {
    pool.for_each([](Counter&) { ++seen_from_destructor; });
  }
  Pool<Counter>& pool;
};

TEST(PoolWalk, AnObjectWhoseDestructorIsRunningIsStillVisited) {
  Counter::seen_from_destructor = 0;
  Pool<Counter> pool(8);
  Counter* first = pool.spawn(pool);
  (void)pool.spawn(pool);
  pool.despawn(first);
  EXPECT_EQ(Counter::seen_from_destructor, 2);
  Counter::seen_from_destructor = 0;
  pool.clear();
  EXPECT_EQ(Counter::seen_from_destructor, 1);
}

// A copy that leaves a fragment in its pool when it dies (a copy is its move).
struct Fragmenting {
  static inline int alive = 0;
  Fragmenting(Pool<Fragmenting>& pool, int id, bool leaves_fragment)
      : pool(pool), id(id), leaves_fragment(leaves_fragment) {
    ++alive;
  }
  Fragmenting(const Fragmenting& other)
      : pool(other.pool), id(other.id), leaves_fragment(other.leaves_fragment) {
    ++alive;
  }
  ~Fragmenting() {
    --alive;
    if (leaves_fragment) (void)pool.spawn(pool, -id, false);
  }
  Pool<Fragmenting>& pool;
  int id;
  bool leaves_fragment;
};

TEST(PoolCompact, ASpawnFromTheMovedObjectsDestructorTakesAnotherSlot) {
  Fragmenting::alive = 0;
  {
    Pool<Fragmenting> pool(8);
    Fragmenting* hole = pool.spawn(pool, 0, false);
    const Handle<Fragmenting> shell = pool.handle_of(pool.spawn(pool, 7, true));
    pool.despawn(hole);
    EXPECT_EQ(pool.compact(), 1u);
    ASSERT_NE(pool.get(shell), nullptr);
    EXPECT_EQ(pool.get(shell)->id, 7);
    EXPECT_EQ(pool.size(), 2u);
    EXPECT_EQ(Fragmenting::alive, 2);
    pool.get(shell)->leaves_fragment = false;
  }
  EXPECT_EQ(Fragmenting::alive, 0);
}

// Notes its handle in every constructor, as a registry of names would.
struct Registered {
  explicit Registered(Pool<Registered>& pool) : pool(pool), self(pool.handle_of(this)) {}
  Registered(Registered&& other) noexcept : pool(other.pool), self(pool.handle_of(this)) {}
  Pool<Registered>& pool;
  Handle<Registered> self;
};

TEST(PoolCompact, HandleOfThisInTheMoveConstructorGivesTheObjectsHandle) {
  Pool<Registered> pool(8);
  Registered* hole = pool.spawn(pool);
  const Handle<Registered> moving = pool.handle_of(pool.spawn(pool));
  pool.despawn(hole);
  EXPECT_EQ(pool.compact(), 1u);
  EXPECT_EQ(pool.get(moving)->self, moving);
}

// Its move constructor throws when asked.
struct ThrowingMove {
  explicit ThrowingMove(int id) : id(id) {}
  ThrowingMove(ThrowingMove&& other) : id(other.id) {
    if (other.id < 0) throw std::runtime_error("move failed");
  }
  int id;
};

TEST(PoolCompact, AMoveConstructorThatThrowsLeavesTheObjectWhereItWas) {
  Pool<ThrowingMove> pool(4, Growth::fixed, DebugChecks::on);
  pool.set_leak_report(poolalloc::LeakReport::off);
  ThrowingMove* hole = pool.spawn(1);
  ThrowingMove* stays = pool.spawn(-2);
  const Handle<ThrowingMove> handle = pool.handle_of(stays);
  pool.despawn(hole);
  EXPECT_THROW((void)pool.compact(), std::runtime_error);
  EXPECT_EQ(pool.get(handle), stays);
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.spawn(3), hole);  // the target slot is free again, with its fill pattern
  pool.get(handle)->id = 2;
  EXPECT_EQ(pool.compact(), 0u);
}

using PoolCompactDeathTest = ::testing::Test;

struct Hp {
  int hp;
  int pad[3] = {};
};

TEST_F(PoolCompactDeathTest, ASlotWrittenAfterDespawnIsReportedWhenCompactMovesAnObjectThere) {
  Pool<Hp> pool(8, Growth::fixed, DebugChecks::on);
  pool.set_leak_report(poolalloc::LeakReport::off);
  Hp* stale = pool.spawn(Hp{1});
  (void)pool.spawn(Hp{2});
  (void)pool.spawn(Hp{3});
  pool.despawn(stale);
  stale->hp = 7;  // a write through a stale pointer
  EXPECT_DEATH((void)pool.compact(), "compact of " + death_test_hex(stale) +
                                         ": the slot was written after its object was despawned");
}

struct Id {
  int id;
};

// A wave that is over despawns the rest of its wave and gives the memory back from a walk.
TEST(PoolWalk, ShrinkDuringForEachDoesNothingAndTheWalkVisitsOnlyLiveObjects) {
  Pool<Id> pool(10, Growth::growable);  // chunks of 10 and 118 slots (up to 128)
  std::vector<Id*> all;
  for (int i = 0; i < 40; ++i) all.push_back(pool.spawn(Id{i}));
  int visits = 0;
  std::size_t released_in_walk = 1;
  pool.for_each([&](Id& object) {
    ++visits;
    EXPECT_LT(object.id, 10);
    if (object.id == 5) {
      for (int i = 10; i < 40; ++i) pool.despawn(all[i]);
      released_in_walk = pool.shrink();
    }
  });
  EXPECT_EQ(visits, 10);
  EXPECT_EQ(released_in_walk, 0u);
  EXPECT_EQ(pool.shrink(), 118 * Pool<Id>::slot_bytes());  // up to 128
  EXPECT_EQ(pool.capacity(), 10u);
}

// The first of a wave: when it dies, it despawns the rest and gives the memory back.
struct Leader {
  static inline std::size_t released = 0;
  static inline int destroyed = 0;
  Leader(Pool<Leader>& pool, std::vector<Leader*>* wave) : pool(pool), wave(wave) {}
  ~Leader() {
    ++destroyed;
    if (wave == nullptr) return;
    for (Leader* other : *wave) pool.despawn(other);
    released += pool.shrink();
  }
  Pool<Leader>& pool;
  std::vector<Leader*>* wave;
};

TEST(PoolLifetime, ShrinkFromADestructorDuringClearDoesNothing) {
  Leader::released = 0;
  Leader::destroyed = 0;
  Pool<Leader> pool(2, Growth::growable);  // chunks of 2 and 126 slots (up to 128)
  std::vector<Leader*> wave;
  (void)pool.spawn(pool, &wave);
  for (int i = 0; i < 3; ++i) wave.push_back(pool.spawn(pool, nullptr));
  wave.erase(wave.begin());  // the leader despawns the two in the second chunk
  pool.clear();
  EXPECT_EQ(Leader::destroyed, 4);
  EXPECT_EQ(Leader::released, 0u);
  EXPECT_EQ(pool.shrink(), 126 * Pool<Leader>::slot_bytes());
}

// Restarts its level when it is built: clears its pool, or walks it, or despawns the first object
// and compacts, from its constructor.
struct Restart {
  enum class Does { nothing, clears, walks, compacts };
  static inline int destroyed = 0;
  static inline int seen_by_walks = 0;
  Restart(Pool<Restart>& pool, Does does, Restart* first = nullptr) {
    switch (does) {
      case Does::nothing:
        break;
      case Does::clears:
        pool.clear();
        break;
      case Does::walks:
        pool.for_each([](Restart&) { ++seen_by_walks; });
        for ([[maybe_unused]] Restart& other : pool) ++seen_by_walks;
        break;
      case Does::compacts:
        pool.despawn(first);
        EXPECT_EQ(pool.compact(), 0u);
        break;
    }
  }
  Restart(Restart&&) noexcept = default;
  ~Restart() { ++destroyed; }
};

TEST(PoolLifetime, AConstructorThatClearsThePoolDestroysTheOthersAndIsBuilt) {
  Restart::destroyed = 0;
  Pool<Restart> pool(8);
  (void)pool.spawn(pool, Restart::Does::nothing);
  (void)pool.spawn(pool, Restart::Does::nothing);
  Restart* restart = pool.spawn(pool, Restart::Does::clears);
  EXPECT_EQ(Restart::destroyed, 2);
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(&*pool.begin(), restart);
  EXPECT_EQ(pool.get(pool.handle_of(restart)), restart);
  pool.clear();
  EXPECT_EQ(Restart::destroyed, 3);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(PoolWalk, AWalkFromAConstructorSkipsTheObjectBeingBuilt) {
  Restart::seen_by_walks = 0;
  Pool<Restart> pool(8);
  (void)pool.spawn(pool, Restart::Does::nothing);
  (void)pool.spawn(pool, Restart::Does::walks);
  EXPECT_EQ(Restart::seen_by_walks, 2);  // the first object, by for_each and by range-for
}

TEST(PoolCompact, DoesNothingFromAConstructor) {
  Restart::destroyed = 0;
  Pool<Restart> pool(8);
  Restart* first = pool.spawn(pool, Restart::Does::nothing);
  Restart* built = pool.spawn(pool, Restart::Does::compacts, first);  // slot 1, above the hole
  EXPECT_EQ(Restart::destroyed, 1);
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(&*pool.begin(), built);
  EXPECT_EQ(pool.compact(), 1u);
}

}  // namespace

// An object that despawns itself when it dies, by pointer or by its own handle (which its move
// copies): the moved-from object's destructor in compact() must leave the moved object alone.
struct SelfOwned {
  static inline int destroyed = 0;
  explicit SelfOwned(Pool<SelfOwned>& pool, bool by_handle)
      : pool(&pool), by_handle(by_handle), self(pool.handle_of(this)) {}
  SelfOwned(SelfOwned&& other) noexcept = default;
  ~SelfOwned() {
    ++destroyed;
    if (by_handle) {
      pool->despawn(self);
    } else {
      pool->despawn(this);
    }
  }
  Pool<SelfOwned>* pool;
  bool by_handle;
  Handle<SelfOwned> self;
};

TEST(PoolCompact, AMovedFromObjectThatDespawnsItselfLeavesTheMovedObjectAlive) {
  for (const bool by_handle : {false, true}) {
    SelfOwned::destroyed = 0;
    {
      Pool<SelfOwned> pool(4);
      SelfOwned* hole = pool.spawn(pool, by_handle);
      SelfOwned* last = pool.spawn(pool, by_handle);
      const Handle<SelfOwned> handle = last->self;
      pool.despawn(hole);
      ASSERT_EQ(SelfOwned::destroyed, 1);
      EXPECT_EQ(pool.compact(), 1u);
      EXPECT_EQ(SelfOwned::destroyed, 2) << "by handle: " << by_handle;  // the moved-from one
      EXPECT_EQ(pool.size(), 1u);
      ASSERT_NE(pool.get(handle), nullptr);
      EXPECT_EQ(pool.get(handle)->self, handle);
    }
    EXPECT_EQ(SelfOwned::destroyed, 3);
  }
}

// The moved-from object's destructor in compact() asks for its own handle (handle_of(this)), and
// walks its pool with each(): both give the handle of the object it became, which resolves to the
// moved object, and a despawn of it is ignored. (The slot showed the stamp of the object whose id
// it took in the trade: a stale handle, whose despawn was reported as a misuse.)
struct AsksItsHandle {
  static inline Pool<AsksItsHandle>* pool = nullptr;
  static inline std::vector<Handle<AsksItsHandle>> asked;
  static inline std::vector<Handle<AsksItsHandle>> walked;
  AsksItsHandle() = default;
  AsksItsHandle(AsksItsHandle&&) noexcept = default;
  ~AsksItsHandle() {
    const Handle<AsksItsHandle> self = pool->handle_of(this);
    asked.push_back(self);
    pool->each([](Handle<AsksItsHandle> handle, AsksItsHandle&) { walked.push_back(handle); });
    pool->despawn(self);
  }
};

TEST(PoolCompact, AMovedFromObjectsHandleIsTheHandleOfTheObjectItBecame) {
  Pool<AsksItsHandle> pool(4);
  AsksItsHandle::pool = &pool;
  AsksItsHandle* hole = pool.spawn();
  const Handle<AsksItsHandle> moved = pool.handle_of(pool.spawn());
  pool.despawn(hole);  // asks, walks (both objects) and despawns itself: ignored
  AsksItsHandle::asked.clear();
  AsksItsHandle::walked.clear();
  EXPECT_EQ(pool.compact(), 1u);
  EXPECT_EQ(AsksItsHandle::asked, std::vector{moved});
  EXPECT_EQ(AsksItsHandle::walked, (std::vector{moved, moved}));  // the moved one, the dying one
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.get(moved), &*pool.begin());
}

// Compacts its pool when it dies, or when a walk reaches it.
struct Compactor {
  static inline int built = 0;
  static inline int destroyed = 0;
  static inline std::size_t moved_by_nested = 0;
  explicit Compactor(Pool<Compactor>& pool) : pool(&pool) { ++built; }
  Compactor(Compactor&& other) noexcept : pool(other.pool) { ++built; }
  ~Compactor() {
    ++destroyed;
    moved_by_nested += pool->compact();
  }
  Pool<Compactor>* pool;
};

TEST(PoolCompact, DoesNothingFromADestructorOrAWalk) {
  Compactor::built = Compactor::destroyed = 0;
  Compactor::moved_by_nested = 0;
  {
    Pool<Compactor> pool(8);
    std::vector<Compactor*> objects;
    for (int i = 0; i < 6; ++i) objects.push_back(pool.spawn(pool));
    pool.despawn(objects[1]);  // its destructor compacts: nothing moves
    EXPECT_EQ(pool.size(), 5u);
    int visited = 0;
    pool.for_each([&](Compactor&) {
      ++visited;
      EXPECT_EQ(pool.compact(), 0u);
    });
    EXPECT_EQ(visited, 5);
    pool.clear();  // each destructor compacts: nothing moves, each dies once
    EXPECT_EQ(pool.size(), 0u);
  }
  EXPECT_EQ(Compactor::moved_by_nested, 0u);
  EXPECT_EQ(Compactor::built, 6);
  EXPECT_EQ(Compactor::destroyed, 6);
}

// Moves its pool away when it dies.
struct Mover {
  explicit Mover(Pool<Mover>& pool, Pool<Mover>& elsewhere) : pool(&pool), elsewhere(&elsewhere) {}
  ~Mover() { *elsewhere = std::move(*pool); }
  Pool<Mover>* pool;
  Pool<Mover>* elsewhere;
};

using PoolMoveBusyDeathTest = ::testing::Test;

TEST_F(PoolMoveBusyDeathTest, AMoveFromADestructorOrAWalkIsReported) {
  EXPECT_DEATH(
      {
        Pool<Mover> pool(4);
        Pool<Mover> elsewhere(4);
        pool.despawn(pool.spawn(pool, elsewhere));
      },
      "move of the pool while a constructor or destructor of its objects or a walk over it runs");
  EXPECT_DEATH(
      {
        Pool<int> pool(4);
        (void)pool.spawn(1);
        pool.for_each([&](int&) { Pool<int> taken(std::move(pool)); });
      },
      "move of the pool while a constructor or destructor of its objects or a walk over it runs");
}

// Moves its pool away, or despawns itself, while it is being built.
struct Premature {
  enum class Does { moves_the_pool, despawns_itself, despawns_its_handle };
  Premature(Pool<Premature>& pool, Does does) {
    switch (does) {
      case Does::moves_the_pool: {
        Pool<Premature> taken(std::move(pool));
        break;
      }
      case Does::despawns_itself:
        pool.despawn(this);
        break;
      case Does::despawns_its_handle:
        pool.despawn(pool.handle_of(this));
        break;
    }
  }
};

TEST_F(PoolMoveBusyDeathTest, AMoveFromAConstructorIsReported) {
  EXPECT_DEATH(
      {
        Pool<Premature> pool(4);
        (void)pool.spawn(pool, Premature::Does::moves_the_pool);
      },
      "move of the pool while a constructor or destructor of its objects or a walk over it runs");
}

using PoolBuildingDeathTest = ::testing::Test;

TEST_F(PoolBuildingDeathTest, ADespawnOfTheObjectBeingBuiltIsReported) {
  EXPECT_DEATH(
      {
        Pool<Premature> pool(4);
        (void)pool.spawn(pool, Premature::Does::despawns_itself);
      },
      ", which is not alive");
  EXPECT_DEATH(
      {
        Pool<Premature> pool(4);
        (void)pool.spawn(pool, Premature::Does::despawns_its_handle);
      },
      "generation \\w+\\), which refers to no live object of this pool");
}

struct Value {
  static inline int alive = 0;
  explicit Value(int v) : value(v) { ++alive; }
  Value(Value&& other) noexcept : value(other.value) { ++alive; }
  ~Value() { --alive; }
  int value;
};

// A program that gives memory back as soon as compaction empties a chunk.
TEST(PoolCompact, ShrinkFromTheMovedCallbackDoesNothingAndEveryObjectMoves) {
  Value::alive = 0;
  {
    Pool<Value> pool(10, Growth::growable);  // chunks of 10, 118 and 128 slots
    std::vector<Value*> all;
    for (int i = 0; i < 150; ++i) all.push_back(pool.spawn(i));
    ASSERT_EQ(pool.chunk_count(), 3u);
    for (int i = 0; i < 150; ++i) {
      if (i != 5 && i != 149) pool.despawn(all[i]);
    }
    std::vector<int> moved_values;
    std::size_t released_in_callback = 0;
    EXPECT_EQ(pool.compact([&](Value*, Value* to) {
      moved_values.push_back(to->value);
      released_in_callback += pool.shrink();
    }),
              2u);
    EXPECT_EQ(moved_values, (std::vector<int>{149, 5}));
    EXPECT_EQ(released_in_callback, 0u);
    EXPECT_EQ(pool.size(), 2u);
    EXPECT_EQ(Value::alive, 2);
    std::vector<int> values;
    for (const Value& v : pool) values.push_back(v.value);
    EXPECT_EQ(values, (std::vector<int>{149, 5}));
    EXPECT_EQ(pool.shrink(), (118 + 128) * Pool<Value>::slot_bytes());
  }
  EXPECT_EQ(Value::alive, 0);
}

struct Shield {
  int strength = 100;
};

// Owns a shield of another pool by handle; its move takes the handle when `takes` is set, and
// copies it otherwise (the mistake that the documentation warns of).
struct Turret {
  static inline int destroyed = 0;
  Turret(Pool<Shield>& shields, bool takes)
      : shields(&shields), takes(takes), shield(shields.handle_of(shields.spawn())) {}
  Turret(Turret&& other) noexcept
      : shields(other.shields),
        takes(other.takes),
        shield(other.takes ? std::exchange(other.shield, {}) : other.shield) {}
  ~Turret() {
    ++destroyed;
    shields->despawn(shield);
  }
  Pool<Shield>* shields;
  bool takes;
  Handle<Shield> shield;
};

TEST(PoolCompact, RunsTheMovedFromObjectsDestructorWhichReleasesWhatTheMoveLeftItOwning) {
  for (const bool takes : {true, false}) {
    Turret::destroyed = 0;
    Pool<Shield> shields(8);
    Pool<Turret> turrets(8);
    Turret* first = turrets.spawn(shields, takes);
    const Handle<Turret> last = turrets.handle_of(turrets.spawn(shields, takes));
    turrets.despawn(first);
    ASSERT_EQ(turrets.compact(), 1u);
    EXPECT_EQ(Turret::destroyed, 2);  // the despawned turret and the moved-from one
    if (takes) {                      // the pattern of toolkit.md: the shield stays alive and owned
      EXPECT_EQ(shields.size(), 1u);
      EXPECT_NE(shields.get(turrets.get(last)->shield), nullptr);
    } else {  // a copied handle: the moved-from destructor despawned the shield
      EXPECT_EQ(shields.size(), 0u);
      EXPECT_EQ(shields.get(turrets.get(last)->shield), nullptr);
      turrets.get(last)->shield = {};  // nothing left to despawn
    }
  }
}

namespace {

// While compact() moves it, walks its pool, looks up its own handle, or clears or despawns.
struct InTransit {
  enum class Does {
    walks,
    clears,
    clears_as_moved_from,
    despawns_itself,
    despawns_its_source,
    despawns_its_handle
  };
  static inline Does does = Does::walks;
  static inline std::vector<const InTransit*> walked;
  static inline std::vector<const InTransit*> each_walked;
  static inline std::vector<const InTransit*> iterated;
  static inline const InTransit* found = nullptr;
  explicit InTransit(Pool<InTransit>& pool) : pool(&pool) {}
  InTransit(InTransit&& other) noexcept : pool(other.pool) {
    if (!other.moving) return;
    switch (does) {
      case Does::walks:
        pool->for_each([](InTransit& object) { walked.push_back(&object); });
        pool->each([](Handle<InTransit>, InTransit& object) { each_walked.push_back(&object); });
        for (const InTransit& object : *pool) iterated.push_back(&object);
        found = pool->get(pool->handle_of(this));
        break;
      case Does::clears:
        pool->clear();
        break;
      case Does::clears_as_moved_from:
        break;
      case Does::despawns_itself:
        pool->despawn(this);
        break;
      case Does::despawns_its_source:
        pool->despawn(&other);
        break;
      case Does::despawns_its_handle:
        pool->despawn(pool->handle_of(this));
        break;
    }
  }
  ~InTransit() {
    if (moving && does == Does::clears_as_moved_from) pool->clear();
  }
  Pool<InTransit>* pool;
  bool moving = false;
};

// Three objects, the first despawned: compact() moves the third into its slot, running `does`.
void compact_with_a_hole(InTransit::Does does) {
  Pool<InTransit> pool(4);
  InTransit* hole = pool.spawn(pool);
  (void)pool.spawn(pool);
  pool.spawn(pool)->moving = true;
  pool.despawn(hole);
  InTransit::does = does;
  (void)pool.compact();
}

TEST(PoolCompact, AWalkFromAMoveConstructorSkipsTheObjectBeingMovedWhoseHandleResolvesToNothing) {
  Pool<InTransit> pool(4);
  InTransit* hole = pool.spawn(pool);
  const InTransit* stays = pool.spawn(pool);
  InTransit* moves = pool.spawn(pool);
  moves->moving = true;
  const Handle<InTransit> handle = pool.handle_of(moves);
  pool.despawn(hole);
  InTransit::does = InTransit::Does::walks;
  InTransit::found = moves;
  ASSERT_EQ(pool.compact(), 1u);
  const std::vector<const InTransit*> only_the_other{stays};
  EXPECT_EQ(InTransit::walked, only_the_other);
  EXPECT_EQ(InTransit::each_walked, only_the_other);
  EXPECT_EQ(InTransit::iterated, only_the_other);
  EXPECT_EQ(InTransit::found, nullptr);
  ASSERT_NE(pool.get(handle), nullptr);  // once the move has returned
  EXPECT_EQ(pool.size(), 2u);
}

using PoolCompactDeathTest = ::testing::Test;

TEST_F(PoolCompactDeathTest, ClearOrADespawnOfTheObjectBeingMovedFromItsMoveConstructorIsReported) {
  EXPECT_DEATH(compact_with_a_hole(InTransit::Does::clears), "clear\\(\\) during compact\\(\\)");
  EXPECT_DEATH(compact_with_a_hole(InTransit::Does::clears_as_moved_from),
               "clear\\(\\) during compact\\(\\)");
  EXPECT_DEATH(compact_with_a_hole(InTransit::Does::despawns_itself), ", which is not alive");
  EXPECT_DEATH(compact_with_a_hole(InTransit::Does::despawns_its_source), ", which is not alive");
  EXPECT_DEATH(compact_with_a_hole(InTransit::Does::despawns_its_handle),
               "which refers to no live object of this pool");
}

}  // namespace

namespace {

// During clear(), a despawn of a handle that refers to no live object is ignored, a stale or
// foreign one too: the clear may have destroyed the handle's object and handed its slot to what a
// destructor spawned, which the pool cannot tell from a stale handle. Here the first object's
// destructor spawns a fragment into its own slot, and the second then despawns the first by its
// old handle; a third despawns a handle that was stale before the clear.
TEST(PoolLifetime, DuringClearADespawnOfAHandleToNoLiveObjectIsIgnoredAStaleOneToo) {
  Node::destroyed = Node::fragments_spawned = 0;
  Pool<Node> pool(8);
  Node* first = pool.spawn(pool, 1);
  first->leaves_fragment = true;
  const Handle<Node> first_handle = pool.handle_of(first);
  Node* second = pool.spawn(pool, 1);
  second->held = first_handle;
  const Handle<Node> stale = pool.handle_of(pool.spawn(pool, 1));
  pool.despawn(stale);
  Node* third = pool.spawn(pool, 1);  // in the stale handle's slot
  third->held = stale;
  ASSERT_EQ(Node::destroyed, 1);
  pool.clear();
  EXPECT_EQ(Node::fragments_spawned, 1);
  EXPECT_EQ(Node::destroyed, 5);  // the stale one, the three, the fragment
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
