// The toolkit's objects are single-threaded by design: one per thread. These tests run one per
// thread in parallel, so ThreadSanitizer can show that separate objects share no state.
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/synchronized.hpp>

#include <gtest/gtest.h>

#include <array>
#include <memory_resource>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;

template <class Work>
void on_threads(Work work) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& thread : threads) thread.join();
}

TEST(OnePerThread, PoolsInParallelThreadsKeepTheirObjectsApart) {
  std::array<bool, kThreads> intact{};
  on_threads([&](int t) {
    poolalloc::Pool<int> pool(64, poolalloc::Growth::growable);
    std::vector<int*> live;
    for (int round = 0; round < 200; ++round) {
      for (int i = 0; i < 100; ++i) live.push_back(pool.spawn(t * 1000 + i));
      bool ok = true;
      for (int i = 0; i < 100; ++i) ok = ok && *live[i] == t * 1000 + i;
      for (int* p : live) pool.despawn(p);
      live.clear();
      if (!ok) return;
    }
    intact[t] = pool.size() == 0;
  });
  for (bool ok : intact) EXPECT_TRUE(ok);
}

TEST(OnePerThread, FramesAndPoolResourcesInParallelThreads) {
  std::array<std::size_t, kThreads> sums{};
  on_threads([&](int t) {
    poolalloc::FrameAllocator frame(1 << 16);
    poolalloc::PoolResource pool;
    for (int round = 0; round < 100; ++round) {
      std::pmr::vector<std::size_t> values(&pool);
      for (std::size_t i = 0; i < 100; ++i) values.push_back(i);
      auto* scratch = static_cast<std::size_t*>(frame.allocate(100 * sizeof(std::size_t)));
      for (std::size_t i = 0; i < 100; ++i) scratch[i] = values[i] + static_cast<std::size_t>(t);
      for (std::size_t i = 0; i < 100; ++i) sums[t] += scratch[i];
      frame.reset();
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(sums[t], 100u * (4950u + 100u * t));
}

TEST(Synchronized, LetsThreadsShareOnePool) {
  poolalloc::Synchronized<poolalloc::Pool<int>> shared(kThreads * 1000);
  on_threads([&](int thread) {
    std::vector<int*> mine;
    for (int i = 0; i < 1000; ++i) mine.push_back(shared.spawn(thread * 1000 + i));
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(*mine[i], thread * 1000 + i);
    for (int i = 0; i < 1000; i += 2) shared.despawn(mine[i]);
  });
  EXPECT_EQ(shared.with_lock([](const poolalloc::Pool<int>& pool) { return pool.size(); }),
            std::size_t{kThreads * 500});
}

TEST(Synchronized, ForwardsAllocateAndDeallocate) {
  poolalloc::Synchronized<poolalloc::FixedPool> shared(64, 4 * kThreads);
  on_threads([&](int) {
    for (int i = 0; i < 1000; ++i) {
      void* a = shared.allocate();
      void* b = shared.allocate();
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, a);
      shared.deallocate(a);
      shared.deallocate(b);
    }
  });
  EXPECT_EQ(shared.with_lock([](poolalloc::FixedPool& pool) { return pool.used_count(); }), 0u);
}

}  // namespace
