#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "address_text.hpp"

namespace {

using poolalloc::DebugChecks;
using poolalloc::Growth;
using poolalloc::Pool;

struct Counted {
  static inline int alive = 0;
  explicit Counted(int v) : value(v) { ++alive; }
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
  for (int i = 0; i < 100; ++i) live.push_back(pool.spawn(i));
  EXPECT_GE(pool.capacity(), 100u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(live[i]->value, i);
  for (Counted* c : live) pool.despawn(c);
  EXPECT_EQ(pool.size(), 0u);
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

TEST(Pool, ReportsLiveObjectsWhenDestroyedWithDebugChecks) {
  testing::internal::CaptureStderr();
  const void* leaked = nullptr;
  {
    Pool<Counted> pool(4, Growth::fixed, DebugChecks::on);
    leaked = pool.spawn(1);
    pool.despawn(pool.spawn(2));
  }
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("leaked block " + hex(leaked)), std::string::npos) << report;
  EXPECT_NE(report.find("1 blocks still allocated at destroy()"), std::string::npos) << report;
  Counted::alive = 0;
}

using PoolDeathTest = ::testing::Test;

TEST_F(PoolDeathTest, DespawnOfAForeignObjectAbortsBeforeItsDestructorRuns) {
  Pool<LoudOnDestruction> pool(4);
  LoudOnDestruction outsider;
  EXPECT_DEATH(pool.despawn(&outsider),
               "^poolalloc: FixedPool 0x[0-9a-f]+ \\(block 4 B\\): "
               "deallocate of " +
                   hex(&outsider) + " outside the pool");
}

TEST_F(PoolDeathTest, DoubleDespawnAbortsBeforeTheDestructorRunsTwice) {
  Pool<LoudOnDestruction> pool(4, Growth::fixed, DebugChecks::on);
  LoudOnDestruction* object = pool.spawn();
  testing::internal::CaptureStderr();
  pool.despawn(object);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "destructor ran\n");
  EXPECT_DEATH(pool.despawn(object),
               "^poolalloc: FixedPool 0x[0-9a-f]+ \\(block 4 B\\): deallocate of " + hex(object) +
                   ", which is already free");
}

}  // namespace
