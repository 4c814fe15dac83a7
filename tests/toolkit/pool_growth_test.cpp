// Pool<T>'s growth: chunks of at least 64 slots, reserve(), and a grown pool that finds every
// object by address, by handle and by walking as a pool of one chunk does.
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

struct Item {
  explicit Item(int v) : value(v) {}
  Item(Item&&) noexcept = default;
  int value;
  int pad[3] = {};
};

TEST(PoolGrowth, AGrowablePoolGrowsToAPowerOfTwoOfAtLeastTwiceItsSlotsAnd64More) {
  Pool<Item> pool(5, Growth::growable);
  for (int i = 0; i < 6; ++i) ASSERT_NE(pool.spawn(i), nullptr);
  EXPECT_EQ(pool.capacity(), 128u);  // 5, then 123: 5 + 64 rounded up
  for (int i = 6; i < 129; ++i) ASSERT_NE(pool.spawn(i), nullptr);
  EXPECT_EQ(pool.capacity(), 256u);  // then 128: twice the pool
  EXPECT_EQ(pool.chunk_count(), 3u);
}

TEST(PoolGrowth, ReserveAddsOneChunkAndTheSpawnsUpToItGrowNothing) {
  Pool<Item> pool(64, Growth::growable);
  ASSERT_TRUE(pool.reserve(100'000));
  EXPECT_EQ(pool.capacity(), 131'072u);  // the chunk past the first ends at a power of two
  EXPECT_EQ(pool.chunk_count(), 2u);
  for (int i = 0; i < 131'072; ++i) ASSERT_NE(pool.spawn(i), nullptr);
  EXPECT_EQ(pool.chunk_count(), 2u);
  EXPECT_TRUE(pool.reserve(50));  // room already
  EXPECT_TRUE(pool.reserve(131'073));
  EXPECT_EQ(pool.capacity(), 262'144u);
}

TEST(PoolGrowth, ReserveNeverGrowsAFixedPool) {
  Pool<Item> pool(10);
  EXPECT_TRUE(pool.reserve(10));
  EXPECT_FALSE(pool.reserve(11));
  EXPECT_EQ(pool.capacity(), 10u);
  EXPECT_EQ(pool.chunk_count(), 1u);
}

// Chunks of 3, 125, 128, 256, ... slots: the pool's first 64-slot word begins in the first chunk
// and ends in the second.
TEST(PoolGrowth, AGrownPoolFindsEveryObjectByAddressByHandleAndByWalking) {
  Pool<Item> pool(3, Growth::growable);
  std::vector<Item*> objects;
  std::vector<Handle<Item>> handles;
  for (int i = 0; i < 2000; ++i) {
    objects.push_back(pool.spawn(i));
    handles.push_back(pool.handle_of(objects.back()));
  }
  ASSERT_EQ(pool.chunk_count(), 6u);
  std::vector<Item*> walked;
  for (Item& item : pool) walked.push_back(&item);
  EXPECT_EQ(walked, objects);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(pool.get(handles[i]), objects[i]) << i;
    ASSERT_EQ(pool.handle_of(objects[i]), handles[i]) << i;
  }
  for (int i = 0; i < 2000; i += 2) pool.despawn(objects[i]);
  EXPECT_EQ(pool.compact(), 500u);  // the upper half's survivors into the lower half's holes
  for (int i = 1; i < 2000; i += 2) {
    ASSERT_NE(pool.get(handles[i]), nullptr) << i;
    ASSERT_EQ(pool.get(handles[i])->value, i);
    ASSERT_EQ(pool.handle_of(pool.get(handles[i])), handles[i]);
  }
  int live = 0;
  pool.for_each([&](Item& item) {
    EXPECT_EQ(item.value % 2, 1);
    ++live;
  });
  EXPECT_EQ(live, 1000);
  for (int i = 1; i < 2000; i += 2) pool.despawn(handles[i]);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_GT(pool.shrink(), 0u);
  EXPECT_EQ(pool.capacity(), 3u);
}

// Chunks of 64, 64, 128, ..., 4096 slots (a default pool's): the first chunk ends at a multiple of
// 64 slots, so that each 64-slot word lies in one chunk and get() finds a slot with no compare
// with the first chunk's end. Every handle resolves to its object, in every chunk, and to nothing
// once its object is gone or beyond the slots ever used.
TEST(PoolGrowth, APoolGrownFromAPowerOfTwoResolvesEveryHandleInEveryChunk) {
  Pool<Item> pool;
  std::vector<Item*> objects;
  std::vector<Handle<Item>> handles;
  for (int i = 0; i < 5000; ++i) {
    objects.push_back(pool.spawn(i));
    handles.push_back(pool.handle_of(objects.back()));
  }
  ASSERT_EQ(pool.chunk_count(), 8u);
  ASSERT_EQ(pool.capacity(), 8192u);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(pool.get(handles[i]), objects[i]) << i;
  for (int i = 0; i < 5000; i += 3) pool.despawn(handles[i]);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(pool.get(handles[i]), i % 3 == 0 ? nullptr : objects[i]) << i;
  }
  for (std::uint64_t id : {5000u, 8191u, 8192u, 1u << 30, (1u << 31) - 1, 1u << 31, ~0u}) {
    EXPECT_EQ(pool.get(Handle<Item>::from_packed(id << 32 | handles[1].generation())), nullptr)
        << id;
  }
}

}  // namespace
