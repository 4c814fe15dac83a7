// Pool<T>'s growth: chunks of at least 64 slots, reserve(), and a grown pool that finds every
// object by address, by handle and by walking as a pool of one chunk does.
#include <poolalloc/detail/poison.hpp>  // POOLALLOC_DETAIL_ASAN
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#if defined(POOLALLOC_DETAIL_ASAN)
#include <sanitizer/lsan_interface.h>
#endif

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
// and ends in the second (in one run, or apart where they come from operator new).
void expect_a_grown_pool_to_find_every_object_by_address_by_handle_and_by_walking(Growth growth) {
  Pool<Item> pool(3, growth);
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

TEST(PoolGrowth, AGrownPoolFindsEveryObjectByAddressByHandleAndByWalking) {
  expect_a_grown_pool_to_find_every_object_by_address_by_handle_and_by_walking(Growth::growable);
}

TEST(PoolGrowth, APoolGrownFromNewFindsEveryObjectByAddressByHandleAndByWalking) {
  expect_a_grown_pool_to_find_every_object_by_address_by_handle_and_by_walking(
      Growth::growable_from_new);
}

// Chunks of 64, 64, 128, ..., 4096 slots (a default pool's): the first chunk ends at a multiple of
// 64 slots, so that each 64-slot word lies in one chunk and get() finds a slot with no compare
// with the first chunk's end. Every handle resolves to its object, in every chunk, and to nothing
// once its object is gone or beyond the slots ever used.
void expect_a_pool_grown_from_a_power_of_two_to_resolve_every_handle(Growth growth) {
  Pool<Item> pool(0, growth);
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

TEST(PoolGrowth, APoolGrownFromAPowerOfTwoResolvesEveryHandleInEveryChunk) {
  expect_a_pool_grown_from_a_power_of_two_to_resolve_every_handle(Growth::growable);
}

TEST(PoolGrowth, APoolGrownFromNewFromAPowerOfTwoResolvesEveryHandleInEveryChunk) {
  expect_a_pool_grown_from_a_power_of_two_to_resolve_every_handle(Growth::growable_from_new);
}

// Its chunks follow one another in its reserved range: the slots are one array, as in a pool
// created at full size.
TEST(PoolGrowth, AGrowablePoolGrowsInPlace) {
  Pool<Item> pool;
  std::vector<Item*> objects;
  for (int i = 0; i < 5000; ++i) objects.push_back(pool.spawn(i));
  ASSERT_EQ(pool.chunk_count(), 8u);
  const auto first = reinterpret_cast<std::uintptr_t>(objects[0]);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(objects[i]), first + i * pool.slot_bytes()) << i;
  }
}

// shrink() gives the pages of the trailing chunks back to the system; the pool grows into the same
// addresses again.
TEST(PoolGrowth, AGrowablePoolShrunkGrowsInPlaceAgain) {
  Pool<Item> pool;
  std::vector<Item*> objects;
  for (int i = 0; i < 5000; ++i) objects.push_back(pool.spawn(i));
  for (Item* object : objects) pool.despawn(object);
  EXPECT_EQ(pool.shrink(), (8192u - 64u) * pool.slot_bytes());
  EXPECT_EQ(pool.capacity(), 64u);
  for (int i = 0; i < 5000; ++i) {
    Item* object = pool.spawn(i);
    ASSERT_EQ(object, objects[i]) << i;
    ASSERT_EQ(object->value, i);
  }
}

// A slot of 1 MiB: the reserved range (1 GiB) holds the chunks up to 512 slots; the next, up to
// 1,024, comes from operator new, and a slot there is found as in any pool grown in chunks.
struct Huge {
  explicit Huge(int v) : value(v) {}
  int value;
  char bytes[(1 << 20) - sizeof(int)];  // never written
};

TEST(PoolGrowth, AGrowablePoolPastItsRangeGrowsInChunksFromNew) {
  Pool<Huge> pool;
  std::vector<Huge*> objects;
  std::vector<Handle<Huge>> handles;
  for (int i = 0; i < 600; ++i) {
    objects.push_back(pool.spawn(i));
    ASSERT_NE(objects.back(), nullptr) << i;
    handles.push_back(pool.handle_of(objects.back()));
  }
  ASSERT_EQ(pool.capacity(), 1024u);
  ASSERT_EQ(pool.chunk_count(), 5u);  // 64, 64, 128, 256 in the range; 512 from operator new
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(pool.get(handles[i]), objects[i]) << i;
    ASSERT_EQ(pool.get(handles[i])->value, i);
    ASSERT_EQ(pool.handle_of(objects[i]), handles[i]) << i;
  }
  const auto first = reinterpret_cast<std::uintptr_t>(objects[0]);
  for (std::size_t i = 0; i < 512; ++i) {
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(objects[i]), first + i * pool.slot_bytes()) << i;
  }
  int walked = 0;
  for (Huge& object : pool) ASSERT_EQ(object.value, walked++);
  EXPECT_EQ(walked, 600);
  for (int i = 599; i >= 512; --i) pool.despawn(handles[i]);
  EXPECT_EQ(pool.shrink(), 512u * pool.slot_bytes());
  EXPECT_EQ(pool.chunk_count(), 4u);
  for (int i = 0; i < 512; ++i) ASSERT_EQ(pool.get(handles[i]), objects[i]) << i;
}

// The leak checker searches a growable pool's range, which the pool maps itself: a heap block
// that only a live object points to is no leak.
TEST(PoolGrowth, UnderAddressSanitizerABlockThatOnlyALiveObjectPointsToIsNoLeak) {
#if !defined(POOLALLOC_DETAIL_ASAN)
  GTEST_SKIP() << "the leak checker runs under AddressSanitizer";
#else
  struct Holder {
    int* block;
  };
  Pool<Holder> pool;
  for (int i = 0; i < 1000; ++i) ASSERT_NE(pool.spawn(Holder{new int[16]}), nullptr);
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0);
  pool.for_each([](Holder& holder) { delete[] holder.block; });
#endif
}

}  // namespace
