// Pool<T>'s walks over its live objects: for_each, and iterators for range-for and std algorithms.
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <ranges>
#include <utility>
#include <vector>

namespace {

using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

struct Item {
  explicit Item(int v) : value(v) {}
  int value;
};

static_assert(std::forward_iterator<Pool<Item>::iterator>);
static_assert(std::forward_iterator<Pool<Item>::const_iterator>);
static_assert(std::ranges::forward_range<Pool<Item>>);
static_assert(std::ranges::forward_range<const Pool<Item>>);

// Spawns 0 .. count-1 and despawns every object whose value `gone` picks.
template <class Gone>
std::vector<Item*> spawn_then_despawn(Pool<Item>& pool, int count, Gone gone) {
  std::vector<Item*> kept;
  std::vector<Item*> all;
  for (int i = 0; i < count; ++i) all.push_back(pool.spawn(i));
  for (Item* item : all) gone(item->value) ? pool.despawn(item) : kept.push_back(item);
  return kept;
}

TEST(PoolWalk, RangeForVisitsTheLiveObjectsInAddressOrder) {
  Pool<Item> pool(300);
  const std::vector<Item*> kept = spawn_then_despawn(pool, 300, [](int v) { return v % 3 == 1; });
  std::vector<Item*> walked;
  for (Item& item : pool) walked.push_back(&item);
  EXPECT_EQ(walked, kept);
  std::vector<const Item*> const_walked;
  for (const Item& item : std::as_const(pool)) const_walked.push_back(&item);
  EXPECT_TRUE(std::equal(const_walked.begin(), const_walked.end(), kept.begin(), kept.end()));
}

TEST(PoolWalk, IteratorsWalkEveryChunkOfAGrownPool) {
  Pool<Item> pool(2, Growth::growable);
  const std::vector<Item*> kept = spawn_then_despawn(pool, 200, [](int v) { return v % 7 == 0; });
  ASSERT_GT(pool.chunk_count(), 1u);
  std::vector<Item*> walked;
  for (Item& item : pool) walked.push_back(&item);
  EXPECT_EQ(walked, kept);
}

TEST(PoolWalk, IteratorsServeStdAlgorithms) {
  Pool<Item> pool(100);
  (void)spawn_then_despawn(pool, 100, [](int v) { return v % 2 == 0; });
  EXPECT_EQ(std::distance(pool.begin(), pool.end()), 50);
  EXPECT_EQ(std::count_if(pool.cbegin(), pool.cend(), [](const Item& i) { return i.value < 10; }),
            5);
  const auto found =
      std::find_if(pool.begin(), pool.end(), [](const Item& i) { return i.value > 40; });
  ASSERT_NE(found, pool.end());
  EXPECT_EQ(found->value, 41);
  const auto largest = std::ranges::max_element(pool, {}, &Item::value);
  EXPECT_EQ(largest->value, 99);
  Pool<Item>::const_iterator converted = found;
  EXPECT_EQ(converted, found);
  Pool<Item> empty(4);
  EXPECT_EQ(empty.begin(), empty.end());
}

TEST(PoolWalk, EachGivesEveryLiveObjectWithItsHandleInForEachsOrder) {
  Pool<Item> pool(2, Growth::growable);
  const std::vector<Item*> kept = spawn_then_despawn(pool, 300, [](int v) { return v % 3 == 1; });
  ASSERT_GT(pool.compact(), 0u);  // handles that name other slots than their ids
  std::vector<Item*> walked;
  pool.for_each([&](Item& item) { walked.push_back(&item); });
  std::vector<Item*> each_walked;
  pool.each([&](Handle<Item> handle, Item& item) {
    EXPECT_EQ(handle, pool.handle_of(&item));
    EXPECT_EQ(pool.get(handle), &item);
    each_walked.push_back(&item);
  });
  EXPECT_EQ(each_walked, walked);
  EXPECT_EQ(each_walked.size(), kept.size());
  int const_visits = 0;
  std::as_const(pool).each([&](Handle<Item> handle, const Item& item) {
    EXPECT_EQ(pool.get(handle), &item);
    ++const_visits;
  });
  EXPECT_EQ(const_visits, static_cast<int>(walked.size()));
}

TEST(PoolWalk, EachMayDespawnByTheHandleItGivesAndSkipsObjectsDespawnedAheadOfIt) {
  Pool<Item> pool(200);
  std::vector<Handle<Item>> all;
  for (int i = 0; i < 200; ++i) all.push_back(pool.handle_of(pool.spawn(i)));
  std::vector<int> visited;
  pool.each([&](Handle<Item> handle, Item& item) {
    visited.push_back(item.value);
    const int value = item.value;
    pool.despawn(handle);
    if (value + 1 < 200) pool.despawn(all[value + 1]);
  });
  std::vector<int> expected;
  for (int i = 0; i < 200; i += 2) expected.push_back(i);
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(PoolWalk, ARangeForMayDespawnAndSkipsAnObjectDespawnedAheadOfIt) {
  Pool<Item> pool(200);
  std::vector<Item*> all;
  for (int i = 0; i < 200; ++i) all.push_back(pool.spawn(i));
  std::vector<int> visited;
  for (Item& item : pool) {
    visited.push_back(item.value);
    const int value = item.value;
    pool.despawn(&item);                                // the object the loop stands at
    if (value + 1 < 200) pool.despawn(all[value + 1]);  // and the next, not to be visited
  }
  std::vector<int> expected;
  for (int i = 0; i < 200; i += 2) expected.push_back(i);
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
