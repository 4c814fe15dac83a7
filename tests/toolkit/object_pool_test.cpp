#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "address_text.hpp"

namespace {

using poolalloc::DebugChecks;
using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

struct Counted {
  static inline int alive = 0;
  explicit Counted(int v) : value(v) { ++alive; }
  Counted(const Counted& other) : value(other.value) { ++alive; }
  Counted& operator=(const Counted&) = default;
  ~Counted() { --alive; }
  int value;
};

struct Named {
  Named(std::string n, std::unique_ptr<int> p) : name(std::move(n)), payload(std::move(p)) {}
  std::string name;
  std::unique_ptr<int> payload;
};

struct ThrowsWhenAsked {
  explicit ThrowsWhenAsked(bool do_throw) {
    if (do_throw) throw std::runtime_error("constructor failed");
  }
  double data[4] = {};
};

struct alignas(64) CacheLine {
  unsigned char bytes[64];
};

// A destructor that reports itself, to prove a bad despawn is caught before it runs.
struct LoudOnDestruction {
  ~LoudOnDestruction() { std::fputs("destructor ran\n", stderr); }
  int value = 0;
};

// A T that overloads unary & (as handle-like types may): the pool takes an object's address with
// std::addressof (the leak report, which every pool's destructor compiles, did not).
struct AmpersandOverloaded {
  int value = 0;
  int operator&() const { return 42; }
};

TEST(Pool, TakesATypeThatOverloadsUnaryAmpersand) {
  Pool<AmpersandOverloaded> pool(4, Growth::fixed, poolalloc::DebugChecks::on);
  AmpersandOverloaded* object = pool.spawn();
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(pool.get(pool.handle_of(object)), object);
  pool.despawn(object);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(Pool, SpawnForwardsArgumentsToTheConstructor) {
  Pool<Named> pool(4);
  const std::string name = "orc";
  Named* orc = pool.spawn(name, std::make_unique<int>(7));
  ASSERT_NE(orc, nullptr);
  EXPECT_EQ(orc->name, "orc");
  EXPECT_EQ(*orc->payload, 7);
  EXPECT_EQ(pool.size(), 1u);
  pool.despawn(orc);
  EXPECT_EQ(pool.size(), 0u);
}

// No constructor: spawn(args...) initialises it with braces where parentheses would not do (clang
// before 16 has no parenthesised aggregate initialisation).
struct Aggregate {
  int id;
  float weight;
};

TEST(Pool, SpawnInitialisesAnAggregateFromItsArguments) {
  Pool<Aggregate> pool(4);
  Aggregate* object = pool.spawn(7, 2.5f);
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(object->id, 7);
  EXPECT_EQ(object->weight, 2.5f);
  pool.despawn(object);
}

// A type of a terabyte: slots times its size overflow a size_t, which is no memory to be had.
struct Terabyte {
  char bytes[std::size_t{1} << 40];
};

TEST(Pool, ACapacityWhoseBytesOverflowIsMemoryThatCannotBeHad) {
  Pool<Terabyte> pool(std::size_t{1} << 24);
  EXPECT_EQ(pool.capacity(), 0u);
  Pool<Terabyte> growable(0, poolalloc::Growth::growable);
  EXPECT_EQ(growable.capacity(), 0u);
}

TEST(Pool, DespawnRunsTheDestructorAndIgnoresNullptr) {
  Pool<Counted> pool(4);
  Counted* a = pool.spawn(1);
  Counted* b = pool.spawn(2);
  EXPECT_EQ(Counted::alive, 2);
  pool.despawn(a);
  pool.despawn(nullptr);
  EXPECT_EQ(Counted::alive, 1);
  EXPECT_EQ(b->value, 2);
  pool.despawn(b);
  EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, AFixedPoolReturnsNullptrWhenFull) {
  Pool<Counted> pool(3);
  std::vector<Counted*> live;
  for (int i = 0; i < 3; ++i) live.push_back(pool.spawn(i));
  EXPECT_EQ(pool.spawn(99), nullptr);
  EXPECT_EQ(Counted::alive, 3);  // nothing was constructed for the failed spawn
  EXPECT_EQ(pool.capacity(), 3u);
  pool.despawn(live[1]);
  EXPECT_EQ(pool.spawn(4), live[1]);
  for (Counted* c : live) pool.despawn(c);
}

TEST(Pool, AGrowablePoolKeepsSpawningAndNeverMovesObjects) {
  Pool<Counted> pool(2, Growth::growable);
  std::vector<Counted*> live;
  for (int i = 0; i < 200; ++i) live.push_back(pool.spawn(i));
  // 2, then chunks up to the least power of two of at least twice the pool and 64 slots more:
  // 126 (to 128), 128 (to 256)
  EXPECT_EQ(pool.capacity(), 256u);
  EXPECT_EQ(pool.chunk_count(), 3u);
  std::vector<Counted*> walked;
  pool.for_each([&](Counted& c) { walked.push_back(&c); });
  EXPECT_EQ(walked, live);  // each object where its spawn put it
  for (int i = 0; i < 200; ++i) ASSERT_EQ(live[i]->value, i);
  for (Counted* c : live) pool.despawn(c);
  EXPECT_EQ(pool.size(), 0u);
}

static_assert(std::is_default_constructible_v<Pool<Counted>>);

// As a member of an engine's level, which builds its pools before it knows their sizes.
struct LevelOfPools {
  Pool<Counted> enemies;
  Pool<Counted> pickups;
};

TEST(Pool, ADefaultConstructedPoolIsAnEmptyGrowablePool) {
  LevelOfPools level;
  EXPECT_EQ(level.enemies.capacity(), 0u);
  EXPECT_EQ(level.enemies.size(), 0u);
  EXPECT_EQ(level.enemies.chunk_count(), 0u);
  EXPECT_EQ(level.enemies.debug_checks(), poolalloc::kDefaultDebugChecks == DebugChecks::on);
  for (int i = 0; i < 100; ++i) ASSERT_NE(level.enemies.spawn(i), nullptr);
  EXPECT_EQ(level.enemies.capacity(), 128u);  // 64, then 64
  EXPECT_TRUE(level.pickups.reserve(1000));
  std::vector<Pool<Counted>> pools(3);
  EXPECT_NE(pools[2].spawn(1), nullptr);
  level.enemies.clear();
}

TEST(Pool, AGrowablePoolCreatedEmptyGrowsOnItsFirstSpawn) {
  Pool<Counted> pool(0, Growth::growable);
  EXPECT_EQ(pool.capacity(), 0u);
  Counted* first = pool.spawn(7);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->value, 7);
  EXPECT_EQ(pool.capacity(), 64u);
  Pool<Counted> fixed(0);
  EXPECT_EQ(fixed.spawn(1), nullptr);
}

// An object that owns another of its pool, as entities own their parts.
struct Node {
  static inline int destroyed = 0;
  ~Node() { ++destroyed; }
  Pool<Node>::UniquePtr child;
};

TEST(Pool, DestroyingThePoolDestroysEachObjectOnceWhenObjectsOwnOthers) {
  Node::destroyed = 0;
  {
    Pool<Node> pool(4);
    Node* parent = pool.spawn();  // slot 0, its child in slot 1: the walk meets the parent first
    parent->child = pool.make_unique();
  }
  EXPECT_EQ(Node::destroyed, 2);
  Node::destroyed = 0;
  {
    Pool<Node> pool(4);
    Node* placeholder = pool.spawn();
    Node* parent = pool.spawn();  // slot 1
    pool.despawn(placeholder);
    parent->child = pool.make_unique();  // slot 0: the walk meets the child first
  }
  EXPECT_EQ(Node::destroyed, 3);  // the placeholder, then the child and the parent once each
}

TEST(Pool, AThrowingConstructorUnderDebugChecksLeavesItsSlotAsItWas) {
  Pool<ThrowsWhenAsked> pool(1, Growth::fixed, DebugChecks::on);
  EXPECT_THROW((void)pool.spawn(true), std::runtime_error);
  EXPECT_NE(pool.spawn(false), nullptr);  // the slot still holds its fill pattern: no report
}

TEST(Pool, AThrowingConstructorLeavesThePoolUnchanged) {
  Pool<ThrowsWhenAsked> pool(2);
  ThrowsWhenAsked* first = pool.spawn(false);
  EXPECT_THROW((void)pool.spawn(true), std::runtime_error);
  EXPECT_EQ(pool.size(), 1u);
  ThrowsWhenAsked* second = pool.spawn(false);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(pool.spawn(false), nullptr);  // the failed spawn did not lose a block
  pool.despawn(first);
  pool.despawn(second);
}

// A chunk that a growable pool added for the spawn stays: the slot goes back, into it.
TEST(Pool, AThrowingConstructorKeepsTheChunkGrownForIt) {
  Pool<ThrowsWhenAsked> pool(1, Growth::growable);
  ThrowsWhenAsked* first = pool.spawn(false);
  EXPECT_THROW((void)pool.spawn(true), std::runtime_error);
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.capacity(), 128u);  // 1 and 64 slots more, rounded up to a power of two
  EXPECT_EQ(pool.chunk_count(), 2u);
  ThrowsWhenAsked* second = pool.spawn(false);
  EXPECT_EQ(pool.capacity(), 128u);  // the slot the throwing constructor gave back
  pool.despawn(first);
  pool.despawn(second);
}

TEST(Pool, MakeUniqueDespawnsWhenThePointerDies) {
  Pool<Counted> pool(1);
  {
    auto owner = pool.make_unique(5);
    ASSERT_NE(owner, nullptr);
    EXPECT_EQ(owner->value, 5);
    EXPECT_EQ(pool.make_unique(6), nullptr);  // full: an empty pointer
    EXPECT_EQ(pool.size(), 1u);
  }
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, HoldsTypesSmallerThanAnIndex) {
  Pool<char> chars(100);
  Pool<std::uint16_t> shorts(100);
  std::vector<char*> c;
  std::vector<std::uint16_t*> s;
  for (int i = 0; i < 100; ++i) {
    c.push_back(chars.spawn(static_cast<char>(i)));
    s.push_back(shorts.spawn(static_cast<std::uint16_t>(i * 300)));
  }
  for (int i = 0; i < 100; i += 2) chars.despawn(c[i]);  // free links must not hit neighbours
  for (int i = 1; i < 100; i += 2) EXPECT_EQ(*c[i], static_cast<char>(i));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*s[i], static_cast<std::uint16_t>(i * 300));
  EXPECT_EQ(std::set<char*>(c.begin(), c.end()).size(), 100u);
  for (int i = 1; i < 100; i += 2) chars.despawn(c[i]);
  for (auto* p : s) shorts.despawn(p);
}

TEST(Pool, AlignsOverAlignedTypes) {
  Pool<CacheLine> pool(8, Growth::growable);
  std::vector<CacheLine*> live;
  for (int i = 0; i < 20; ++i) {
    live.push_back(pool.spawn());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(live.back()) % 64, 0u);
  }
  for (auto* p : live) pool.despawn(p);
}

TEST(Pool, SpawnFillsTheLowestFreeSlotWhateverTheDespawnOrder) {
  Pool<Counted> pool(200);
  std::vector<Counted*> live;
  for (int i = 0; i < 200; ++i) live.push_back(pool.spawn(i));
  const auto first = reinterpret_cast<std::uintptr_t>(live[0]);
  for (int i = 1; i < 200; ++i) {  // address order, a slot apart
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(live[i]), first + i * Pool<Counted>::slot_bytes());
  }
  std::vector<int> order(200);
  for (int i = 0; i < 200; ++i) order[i] = i;
  const unsigned seed = 42;
  std::printf("despawn order seed %u\n", seed);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int i : order) {
    if (i % 3 != 0) pool.despawn(live[i]);
  }
  for (int i = 0; i < 200; ++i) {
    if (i % 3 == 0) continue;
    EXPECT_EQ(pool.spawn(-i), live[i]) << "slot " << i;
  }
  pool.for_each([&](Counted& c) { pool.despawn(&c); });
}

TEST(Pool, ForEachVisitsLiveObjectsInAddressOrder) {
  Pool<Counted> pool(130);
  std::vector<Counted*> live;
  for (int i = 0; i < 130; ++i) live.push_back(pool.spawn(i));
  for (int i = 0; i < 130; i += 2) pool.despawn(live[i]);
  std::vector<int> seen;
  pool.for_each([&](Counted& c) { seen.push_back(c.value); });
  std::vector<int> odd;
  for (int i = 1; i < 130; i += 2) odd.push_back(i);
  EXPECT_EQ(seen, odd);
  const Pool<Counted>& view = pool;
  int sum = 0;
  view.for_each([&](const Counted& c) { sum += c.value; });
  EXPECT_EQ(sum, 65 * 65);
  pool.for_each([&](Counted& c) { pool.despawn(&c); });  // despawning during the walk is allowed
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, ForEachSkipsAnObjectDespawnedBeforeTheWalkReachesIt) {
  Pool<Counted> pool(200);
  std::vector<Counted*> live;
  for (int i = 0; i < 200; ++i) live.push_back(pool.spawn(i));
  std::vector<int> seen;
  pool.for_each([&](Counted& c) {
    seen.push_back(c.value);
    // The next object, and one far ahead, in another word of the bitmap.
    if (c.value % 2 == 0 && c.value + 1 < 200) pool.despawn(live[c.value + 1]);
    if (c.value == 10) pool.despawn(live[150]);
  });
  std::vector<int> expected;  // the even ones but 150, and 151, which 150 did not despawn
  for (int i = 0; i < 200; i += 2) expected.push_back(i == 150 ? 151 : i);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(pool.size(), 100u);
  EXPECT_EQ(Counted::alive, 100);
  pool.for_each([&](Counted& c) { pool.despawn(&c); });
}

TEST(Pool, ForEachWalksEveryChunkOfAGrownPool) {
  Pool<Counted> pool(3, Growth::growable);
  for (int i = 0; i < 200; ++i) ASSERT_NE(pool.spawn(i), nullptr);
  EXPECT_EQ(pool.chunk_count(), 3u);  // 3, 125 (up to 128), 128
  std::vector<int> seen;
  pool.for_each([&](Counted& c) { seen.push_back(c.value); });
  ASSERT_EQ(seen.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(seen[i], i);
}

TEST(Pool, AHandleFindsItsObjectUntilItIsDespawned) {
  Pool<Counted> pool(4);
  Counted* orc = pool.spawn(1);
  const Handle<Counted> handle = pool.handle_of(orc);
  EXPECT_EQ(pool.get(handle), orc);
  EXPECT_EQ(std::as_const(pool).get(handle), orc);
  EXPECT_EQ(pool.handle_of(orc), handle);
  pool.despawn(orc);
  EXPECT_EQ(pool.get(handle), nullptr);
}

TEST(Pool, AStaleHandleFindsNothingAfterItsSlotIsReused) {
  Pool<Counted> pool(1);
  const Handle<Counted> old = pool.handle_of(pool.spawn(1));
  pool.despawn(old);
  Counted* newcomer = pool.spawn(2);
  ASSERT_EQ(pool.handle_of(newcomer).id(), old.id());  // the same slot
  EXPECT_EQ(pool.get(old), nullptr);
  EXPECT_NE(pool.handle_of(newcomer), old);
  pool.despawn(newcomer);
}

TEST(Pool, ADefaultHandleRefersToNothing) {
  Pool<Counted> pool(2);
  Counted* object = pool.spawn(1);
  static_assert(std::is_trivially_copyable_v<Handle<Counted>>);
  static_assert(sizeof(Handle<Counted>) == 8);
  EXPECT_EQ(pool.get(Handle<Counted>()), nullptr);
  EXPECT_EQ(pool.handle_of(nullptr), Handle<Counted>());
  EXPECT_NE(pool.handle_of(object), Handle<Counted>());
  pool.despawn(object);
}

// A slot gets its stamp when it is first used: one never used holds whatever its memory held,
// here the bytes of a live stamp of id 1, generation 0, and still holds no object.
TEST(Pool, AHandleOfASlotNeverUsedFindsNothingWhateverItsBytes) {
  Pool<Counted> pool(4);
  Counted* first = pool.spawn(1);
  // Through an integer: g++ 12, seeing spawn() whole, takes `first` for the 4 bytes of one
  // object and warns of the writes past them (-Wstringop-overflow).
  auto* second_slot = reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(first) +
                                                   Pool<Counted>::slot_bytes());
  std::memset(second_slot, 0, Pool<Counted>::slot_bytes());
  const std::uint64_t stamp = 1;  // generation 0 in the high half, id 1 in the low one
  std::memcpy(second_slot + Pool<Counted>::slot_bytes() - sizeof stamp, &stamp, sizeof stamp);
  EXPECT_EQ(pool.get(Handle<Counted>::from_packed(std::uint64_t{1} << 32)), nullptr);
  pool.despawn(first);
}

TEST(Pool, HandlesKeyOrderedAndHashedContainers) {
  Pool<Counted> pool(8, Growth::fixed);
  const Handle<Counted> first = pool.handle_of(pool.spawn(1));
  pool.despawn(first);
  const Handle<Counted> reused = pool.handle_of(pool.spawn(2));  // same slot, next generation
  const Handle<Counted> other = pool.handle_of(pool.spawn(3));
  ASSERT_EQ(first.id(), reused.id());
  EXPECT_LT(first, reused);
  EXPECT_TRUE((first <=> reused) < 0);
  EXPECT_TRUE((other <=> other) == 0);
  const std::set<Handle<Counted>> ordered{reused, first, other, first};
  EXPECT_EQ(ordered.size(), 3u);
  EXPECT_EQ(*ordered.begin(), first);
  const std::map<Handle<Counted>, int> keyed{{reused, 2}, {first, 1}, {other, 3}};
  EXPECT_EQ(keyed.begin()->second, 1);
  EXPECT_EQ(keyed.at(other), 3);
  std::unordered_map<Handle<Counted>, int> names{{first, 1}, {reused, 2}, {other, 3}};
  EXPECT_EQ(names.size(), 3u);
  EXPECT_EQ(names.at(reused), 2);
  EXPECT_EQ(names.count(Handle<Counted>()), 0u);
  pool.despawn(reused);
  pool.despawn(other);
}

TEST(Pool, AHandleOfAnotherPoolFindsNothing) {
  Pool<Counted> first(4);
  Pool<Counted> second(4);
  Counted* a = first.spawn(1);
  Counted* b = second.spawn(2);
  EXPECT_EQ(second.get(first.handle_of(a)), nullptr);
  EXPECT_EQ(first.get(second.handle_of(b)), nullptr);
  first.despawn(a);
  second.despawn(b);
}

// Pools made a Fibonacci number apart once started their generations at nearly the same seed:
// after 52,777 spawns into its slot, a handle of one pool matched the object of a pool made
// 28,657 pools later.
TEST(Pool, AHandleOfAPoolMadeManyPoolsEarlierFindsNothing) {
  Pool<Counted> first(1);
  for (int i = 0; i < 52777; ++i) first.despawn(first.spawn(i));
  const Handle<Counted> handle = first.handle_of(first.spawn(-1));
  for (int i = 0; i < 28656; ++i) Pool<Counted> between(1);
  Pool<Counted> later(1);
  (void)later.spawn(2);
  EXPECT_EQ(later.get(handle), nullptr);
}

// A type of its own, so that its pool is the first of the type in the process, as a program's
// first pool of a type is in every run: its generations must not start at a fixed value.
struct FirstOfItsType {
  int value;
};

TEST(Pool, TheFirstPoolOfATypeDoesNotStartAtAFixedGeneration) {
  Pool<FirstOfItsType> pool(1);
  const Handle<FirstOfItsType> handle = pool.handle_of(pool.spawn(FirstOfItsType{1}));
  EXPECT_NE(handle.generation(), 1u);  // where a seed of hash(0) = 0 started it, in every run
}

TEST(Pool, DespawnThroughAHandleDestroysTheObject) {
  Pool<Counted> pool(2);
  const Handle<Counted> handle = pool.handle_of(pool.spawn(7));
  pool.despawn(handle);
  EXPECT_EQ(Counted::alive, 0);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(Pool, CompactMovesLiveObjectsIntoTheLowestSlotsAndKeepsHandles) {
  Pool<Counted> pool(10);
  std::vector<Counted*> live;
  std::vector<Handle<Counted>> handles;
  for (int i = 0; i < 10; ++i) {
    live.push_back(pool.spawn(i));
    handles.push_back(pool.handle_of(live.back()));
  }
  for (int i : {0, 2, 3, 5}) pool.despawn(live[i]);
  EXPECT_EQ(pool.compact(), 4u);  // 9, 8, 7, 6 fill slots 0, 2, 3, 5
  std::vector<int> order;
  pool.for_each([&](Counted& c) { order.push_back(c.value); });
  EXPECT_EQ(order, (std::vector<int>{9, 1, 8, 7, 4, 6}));
  for (int i : {1, 4, 6, 7, 8, 9}) {
    ASSERT_NE(pool.get(handles[i]), nullptr);
    EXPECT_EQ(pool.get(handles[i])->value, i);
  }
  EXPECT_EQ(pool.get(handles[9]), live[0]);  // raw pointers to moved objects are stale
  for (int i : {0, 2, 3, 5}) EXPECT_EQ(pool.get(handles[i]), nullptr);
  EXPECT_EQ(Counted::alive, 6);
  EXPECT_EQ(pool.compact(), 0u);
  pool.for_each([&](Counted& c) { pool.despawn(&c); });
}

TEST(Pool, CompactTellsTheCallbackWhereEachObjectWent) {
  Pool<Counted> pool(4);
  Counted* a = pool.spawn(1);
  Counted* b = pool.spawn(2);
  Counted* c = pool.spawn(3);
  pool.despawn(a);
  pool.despawn(b);
  std::vector<std::pair<Counted*, Counted*>> moves;
  EXPECT_EQ(pool.compact([&](Counted* from, Counted* to) { moves.emplace_back(from, to); }), 1u);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].first, c);
  EXPECT_EQ(moves[0].second, a);
  EXPECT_EQ(a->value, 3);
  pool.despawn(a);
}

TEST(Pool, AHandleSeesNoNewcomerInTheSlotCompactionEmptied) {
  Pool<Counted> pool(2);
  Counted* first = pool.spawn(1);
  const Handle<Counted> moved = pool.handle_of(pool.spawn(2));
  pool.despawn(first);
  ASSERT_EQ(pool.compact(), 1u);
  Counted* newcomer = pool.spawn(3);  // into the slot the moved object left
  EXPECT_EQ(pool.get(moved)->value, 2);
  EXPECT_NE(pool.handle_of(newcomer), moved);
  pool.for_each([&](Counted& c) { pool.despawn(&c); });
}

// A moved object's handle is found through the table of slots by id, not in the slot of its id's
// number, which now holds an object of another id.
TEST(Pool, AMovedObjectsHandleResolvesAndDespawnsWhileTheSlotOfItsIdHoldsAnotherObject) {
  Pool<Counted> pool(3);
  Counted* first = pool.spawn(1);
  Counted* second = pool.spawn(2);
  const Handle<Counted> moved = pool.handle_of(pool.spawn(3));  // id 2, moves to slot 0
  pool.despawn(first);
  pool.despawn(second);
  ASSERT_EQ(pool.compact(), 1u);
  const Handle<Counted> in_slot_one = pool.handle_of(pool.spawn(4));
  const Handle<Counted> in_slot_two = pool.handle_of(pool.spawn(5));  // the slot of id 2
  EXPECT_NE(in_slot_two.id(), moved.id());
  ASSERT_NE(pool.get(moved), nullptr);
  EXPECT_EQ(pool.get(moved)->value, 3);
  EXPECT_EQ(pool.get(in_slot_two)->value, 5);
  pool.despawn(moved);
  EXPECT_EQ(pool.get(moved), nullptr);
  EXPECT_EQ(pool.get(in_slot_one)->value, 4);
  EXPECT_EQ(pool.get(in_slot_two)->value, 5);
  const Handle<Counted> again =
      pool.handle_of(pool.spawn(6));  // slot 0: id 2 again, a new generation
  EXPECT_EQ(again.id(), moved.id());
  EXPECT_EQ(pool.get(moved), nullptr);
  EXPECT_EQ(pool.get(again)->value, 6);
  pool.clear();
}

TEST(Pool, DestroyingThePoolDestroysTheLiveObjects) {
  {
    Pool<Counted> pool(8, Growth::growable);
    for (int i = 0; i < 20; ++i) (void)pool.spawn(i);
    EXPECT_EQ(Counted::alive, 20);
  }
  EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, ReportsLiveObjectsWithTheirAddressesWhenDestroyedWithDebugChecks) {
  testing::internal::CaptureStderr();
  const void* leaked = nullptr;
  {
    Pool<Counted> pool(4, Growth::fixed, DebugChecks::on);
    pool.set_name("orcs");
    leaked = pool.spawn(1);
    pool.despawn(pool.spawn(2));
  }
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_EQ(report, "poolalloc: Pool \"orcs\" (object 4 B): live object " + hex(leaked) +
                        " destroyed with the pool\n"
                        "poolalloc: Pool \"orcs\" (object 4 B): 1 objects still alive when the "
                        "pool was destroyed\n");
  EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, DebugChecksKeepTheCapacity) {
  Pool<Counted> checked(100, Growth::fixed, DebugChecks::on);
  Pool<Counted> unchecked(100, Growth::fixed, DebugChecks::off);
  EXPECT_EQ(checked.capacity(), unchecked.capacity());
}

TEST(Pool, PrintsItsStateInOneLine) {
  Pool<Counted> pool(64);
  pool.set_name("particles");
  Counted* a = pool.spawn(1);
  pool.despawn(pool.spawn(2));
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(),
            "Pool \"particles\" (object 4 B): 1 live, 63 free of 64, peak 2, 1 chunk, "
            "debug checks off");
  pool.despawn(a);
}

using PoolDeathTest = ::testing::Test;

TEST_F(PoolDeathTest, DespawnOfAForeignObjectAbortsBeforeItsDestructorRuns) {
  Pool<LoudOnDestruction> pool(4);
  LoudOnDestruction outsider;
  EXPECT_DEATH(pool.despawn(&outsider),
               "^poolalloc: Pool 0x\\w+ \\(object 4 B\\): "
               "despawn of " +
                   death_test_hex(&outsider) + " outside the pool");
}

TEST_F(PoolDeathTest, DoubleDespawnAbortsBeforeTheDestructorRunsTwice) {
  Pool<LoudOnDestruction> pool(4);
  LoudOnDestruction* object = pool.spawn();
  testing::internal::CaptureStderr();
  pool.despawn(object);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "destructor ran\n");
  EXPECT_DEATH(pool.despawn(object), "^poolalloc: Pool 0x\\w+ \\(object 4 B\\): despawn of " +
                                         death_test_hex(object) + ", which is not alive");
}

TEST_F(PoolDeathTest, DespawnOfASlotNeverUsedAbortsWhateverItsBytes) {
  Pool<Counted> pool(4);
  Counted* first = pool.spawn(1);
  auto* never_used =
      reinterpret_cast<Counted*>(reinterpret_cast<std::byte*>(first) + Pool<Counted>::slot_bytes());
  std::memset(static_cast<void*>(never_used), 0, Pool<Counted>::slot_bytes());  // a live stamp
  EXPECT_DEATH(pool.despawn(never_used),
               "despawn of " + death_test_hex(never_used) + ", which is not alive");
  pool.despawn(first);
}

TEST_F(PoolDeathTest, DespawnOfAnInteriorPointerAborts) {
  Pool<CacheLine> pool(4);
  CacheLine* object = pool.spawn();
  auto* inside = reinterpret_cast<CacheLine*>(object->bytes + 8);
  EXPECT_DEATH(pool.despawn(inside),
               "despawn of " + death_test_hex(inside) + " not at the start of a slot");
  pool.despawn(object);
}

// A 64-byte object takes a slot of 72 bytes (8 times 9): despawn finds the slot of a pointer by a
// multiply with 9's inverse and a rotation, which must tell a multiple of 8 that is no multiple
// of 72 from a slot's start.
TEST_F(PoolDeathTest, DespawnOfAPointerInsideASlotOfNineTimesEightBytesAborts) {
  struct Entity {
    std::uint64_t words[8];
  };
  static_assert(Pool<Entity>::slot_bytes() == 72);
  Pool<Entity> pool(8);
  std::vector<Entity*> objects;
  for (int i = 0; i < 8; ++i) objects.push_back(pool.spawn());
  for (std::size_t offset : {8u, 16u, 56u, 64u}) {
    auto* inside = reinterpret_cast<Entity*>(reinterpret_cast<std::byte*>(objects[3]) + offset);
    EXPECT_DEATH(pool.despawn(inside),
                 "despawn of " + death_test_hex(inside) + " not at the start of a slot");
  }
  for (Entity* object : objects) pool.despawn(object);
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(PoolDeathTest, DespawnOfAPointerASlotBeforeOrPastTheSlotsAborts) {
  struct Entity {
    std::uint64_t words[8];
  };
  Pool<Entity> pool(8);
  std::vector<Entity*> objects;
  for (int i = 0; i < 8; ++i) objects.push_back(pool.spawn());
  const auto step = static_cast<std::ptrdiff_t>(Pool<Entity>::slot_bytes());
  auto* before = reinterpret_cast<Entity*>(reinterpret_cast<std::byte*>(objects[0]) - step);
  auto* past = reinterpret_cast<Entity*>(reinterpret_cast<std::byte*>(objects[7]) + step);
  EXPECT_DEATH(pool.despawn(before), "despawn of " + death_test_hex(before) + " outside the pool");
  EXPECT_DEATH(pool.despawn(past), "despawn of " + death_test_hex(past) + " outside the pool");
  for (Entity* object : objects) pool.despawn(object);
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(PoolDeathTest, DespawnOfAStaleHandleAborts) {
  Pool<Counted> pool(4);
  const Handle<Counted> handle = pool.handle_of(pool.spawn(1));
  pool.despawn(handle);
  EXPECT_DEATH(pool.despawn(handle),
               "despawn of handle \\(id 0, generation \\w+\\), which refers to no live object");
}

TEST_F(PoolDeathTest, DespawnOfAHandleOfAnotherPoolAborts) {
  Pool<Counted> first(4);
  Pool<Counted> second(4);
  first.set_name("first");
  const Handle<Counted> foreign = second.handle_of(second.spawn(1));
  EXPECT_DEATH(first.despawn(foreign),
               "^poolalloc: Pool \"first\" \\(object 4 B\\): despawn of "
               "handle .*, which refers to no live object of this pool");
}

TEST_F(PoolDeathTest, HandleOfAnObjectOfAnotherPoolAborts) {
  Pool<Counted> first(4);
  Pool<Counted> second(4);
  Counted* foreign = second.spawn(1);
  EXPECT_DEATH((void)first.handle_of(foreign),
               "handle_of of " + death_test_hex(foreign) + " outside the pool");
}

TEST_F(PoolDeathTest, HandleOfAnObjectNoLongerAliveAborts) {
  Pool<Counted> pool(4);
  Counted* object = pool.spawn(1);
  pool.despawn(object);
  EXPECT_DEATH((void)pool.handle_of(object),
               "^poolalloc: Pool 0x\\w+ \\(object 4 B\\): handle_of of " + death_test_hex(object) +
                   ", which is not alive");
}

TEST_F(PoolDeathTest, AWriteAfterDespawnIsFoundOnTheNextSpawnWithDebugChecks) {
  Pool<Counted> pool(1, Growth::fixed, DebugChecks::on);
  Counted* object = pool.spawn(1);
  pool.despawn(object);
  reinterpret_cast<unsigned char*>(object)[2] = 0;
  EXPECT_DEATH((void)pool.spawn(2), "spawn of " + death_test_hex(object) +
                                        ": the slot was written after its object was despawned");
}

}  // namespace
