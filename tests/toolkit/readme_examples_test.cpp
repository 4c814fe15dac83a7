// The examples of the README's "The game toolkit" section, verbatim, so that they keep compiling.
#include <poolalloc/toolkit.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <iostream>
#include <memory_resource>
#include <string>
#include <vector>

namespace {

struct Bullet {
  Bullet(float x, float y) : x(x), y(y) {}
  float x, y;
};

TEST(ReadmeExamples, FixedPool) {
  poolalloc::FixedPool pool(64, 1024);  // 1024 blocks of 64 bytes; creating it touches none
  void* block = pool.allocate();        // O(1); nullptr when full
  pool.deallocate(block);               // O(1); a pointer not from this pool aborts with a message

  alignas(64) static std::byte arena[64 * 1024];  // or over memory you own
  poolalloc::FixedPool in_place;
  in_place.create(arena, sizeof arena, 64, 64);
  EXPECT_EQ(in_place.capacity(), 1024u);
}

TEST(ReadmeExamples, ObjectPool) {
  poolalloc::Pool<Bullet> bullets(256);   // or Pool<Bullet>(256, poolalloc::Growth::growable)
  Bullet* b = bullets.spawn(1.0f, 2.0f);  // nullptr when full
  bullets.despawn(b);
  auto owned = bullets.make_unique(3.0f, 4.0f);  // despawned when `owned` dies
  EXPECT_EQ(bullets.size(), 1u);
}

TEST(ReadmeExamples, FixedPoolShrinkNamesPrinting) {
  poolalloc::FixedPool bullets(64, 256, 16, poolalloc::Growth::growable);
  bullets.set_name("bullets");  // reports and printing use the name
  std::vector<void*> wave;
  for (int i = 0; i < 1000; ++i) wave.push_back(bullets.allocate());  // grows to 1024 blocks
  for (void* block : wave) bullets.deallocate(block);
  std::size_t released = bullets.shrink();  // gives back the empty chunks after the first
  std::cout << bullets << "\n";
  // FixedPool "bullets" (block 64 B): 0 used, 256 free of 256, peak 1000, 1 chunk, debug checks off
  EXPECT_EQ(released, 768u * 64);
}

struct Enemy {
  float x = 0, y = 0;
  int health = 100;
};

TEST(ReadmeExamples, PoolHandlesWalkCompact) {
  poolalloc::Pool<Enemy> enemies(1024);
  Enemy* boss = enemies.spawn();
  poolalloc::Handle<Enemy> target = enemies.handle_of(boss);  // 8 bytes, trivially copyable

  enemies.for_each([](Enemy& e) { e.x += 1.0f; });      // live objects, in address order
  if (Enemy* e = enemies.get(target)) e->health -= 10;  // nullptr once it was despawned

  enemies.despawn(target);            // or enemies.despawn(boss)
  Enemy* gone = enemies.get(target);  // nullptr, even after the slot is reused

  std::size_t moved = enemies.compact();  // live objects into the lowest slots; handles stay valid
  EXPECT_EQ(gone, nullptr);
  EXPECT_EQ(moved, 0u);
}

TEST(ReadmeExamples, FrameAllocator) {
  poolalloc::FrameAllocator frame(1 << 20);
  for (int f = 0; f < 3; ++f) {
    auto* scratch = static_cast<float*>(frame.allocate(100 * sizeof(float), alignof(float)));
    scratch[0] = 1.0f;
    frame.reset();  // end of frame: everything goes back at once
  }
  EXPECT_EQ(frame.used(), 0u);
}

TEST(ReadmeExamples, DoubleBufferedFrameAllocator) {
  poolalloc::DoubleBufferedFrameAllocator frames(1 << 20);
  auto* last_frame = static_cast<int*>(frames.allocate(sizeof(int)));
  *last_frame = 7;
  frames.swap_buffers();  // next frame: last_frame stays valid for this one frame more
  EXPECT_EQ(*last_frame, 7);
}

TEST(ReadmeExamples, TypedAllocationOverCallerMemory) {
  struct Vec3 {
    Vec3(float x, float y, float z) : x(x), y(y), z(z) {}
    Vec3() = default;
    float x, y, z;
  };
  alignas(16) static std::byte scratch[64 * 1024];
  poolalloc::FrameAllocator frame(scratch, sizeof scratch);  // never frees `scratch`
  Vec3* origin = frame.new_object<Vec3>(0.0f, 0.0f, 0.0f);   // nullptr when full
  Vec3* path = frame.new_array<Vec3>(256);                   // aligned for Vec3
  EXPECT_NE(origin, nullptr);
  EXPECT_NE(path, nullptr);
}

TEST(ReadmeExamples, StackAllocator) {
  poolalloc::StackAllocator stack(1 << 16);
  const auto level_start = stack.marker();
  void* terrain = stack.allocate(4096);
  {
    poolalloc::StackScope temporary(stack);  // frees to its marker at the end of the scope
    void* decompression_buffer = stack.allocate(8192);
    (void)decompression_buffer;
  }
  (void)terrain;
  stack.free_to_marker(level_start);  // LIFO; a marker above the top aborts with a message
  EXPECT_EQ(stack.used(), 0u);
}

TEST(ReadmeExamples, PoolResource) {
  poolalloc::PoolResource pool;  // pools for 8 ... 256 bytes, larger requests go upstream
  std::pmr::vector<int> ids(&pool);
  std::pmr::vector<std::pmr::string> names(&pool);
  ids.push_back(1);
  names.emplace_back("player one");

  poolalloc::FrameAllocator frame(1 << 16);
  poolalloc::FrameResource per_frame(frame);
  std::pmr::vector<float> visible(&per_frame);
  visible.push_back(0.5f);
  EXPECT_EQ(names[0], "player one");
}

TEST(ReadmeExamples, StlAllocator) {
  poolalloc::FrameAllocator frame(1 << 16);
  using FrameVector = std::vector<int, poolalloc::StlAllocator<int, poolalloc::FrameAllocator>>;
  FrameVector hits{poolalloc::StlAllocator<int, poolalloc::FrameAllocator>(frame)};
  hits.push_back(42);
  EXPECT_EQ(hits[0], 42);
}

TEST(ReadmeExamples, Tracking) {
  poolalloc::FrameAllocator frame(1 << 20);
  poolalloc::Tracked tracked(frame, 64 * 1024, [](std::size_t used, std::size_t budget) {
    std::fprintf(stderr, "frame memory over budget: %zu of %zu bytes\n", used, budget);
  });
  void* scratch = tracked.allocate(1000);
  (void)scratch;
  std::size_t frame_peak = tracked.end_frame();  // log it, then start the next frame
  frame.reset();
  EXPECT_GE(frame_peak, 1000u);
}

TEST(ReadmeExamples, Budgets) {
  poolalloc::Pool<Bullet> bullets(4096);
  poolalloc::Tracked bullet_budget(bullets, 64 * 1024);
  bullet_budget.set_name("bullets");
  Bullet* b = bullet_budget.spawn(0.0f, 0.0f);
  bullet_budget.despawn(b);

  poolalloc::print_budgets(std::cout);  // every live Tracked arena, e.g. in a debug overlay
  // arena                           used        peak      budget  over
  // bullets                            0           8       65536     0
  EXPECT_EQ(bullet_budget.peak(), sizeof(Bullet));
}

TEST(ReadmeExamples, Synchronized) {
  poolalloc::Synchronized<poolalloc::Pool<Bullet>> shared(1024);  // Pool<Bullet>(1024) + a mutex
  Bullet* b = shared.spawn(1.0f, 2.0f);                           // from any thread
  shared.despawn(b);
  std::size_t live = shared.with_lock([](auto& pool) { return pool.size(); });
  EXPECT_EQ(live, 0u);
}

}  // namespace
