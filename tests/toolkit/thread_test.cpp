// The toolkit's objects are single-threaded by design: one per thread. These tests run one per
// thread in parallel, so ThreadSanitizer can show that separate objects share no state, and show
// that what the toolkit does share (Synchronized, the list of budgets) is shared safely.
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/synchronized.hpp>
#include <poolalloc/tracking.hpp>

#include <gtest/gtest.h>

#include "thread_handoff.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory_resource>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using poolalloc_test::Rendezvous;
using poolalloc_test::Step;

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

// Growable pools created on several threads at once, more than the 1,024 whose ranges a process
// holds: each works, with a range or without, and every range comes back when its pool goes (a
// pool grown after them has its slots in one run, as in a range).
TEST(OnePerThread, GrowablePoolsRaceForTheProcesssRangesAndGiveThemBack) {
  std::array<bool, kThreads> intact{};
  on_threads([&](int t) {
    std::vector<poolalloc::Pool<int>> pools(400);
    bool ok = true;
    for (poolalloc::Pool<int>& pool : pools) {
      const int* object = pool.spawn(t);
      ok = ok && object != nullptr && *object == t;
    }
    intact[t] = ok;
  });
  for (bool ok : intact) EXPECT_TRUE(ok);
  poolalloc::Pool<int> later;
  const auto* first = reinterpret_cast<const std::byte*>(later.spawn(0));
  for (int i = 1; i < 5000; ++i) {
    ASSERT_EQ(reinterpret_cast<const std::byte*>(later.spawn(i)), first + i * later.slot_bytes());
  }
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

TEST(Synchronized, WithLockOnAConstOneGivesTheArenaAsConst) {
  poolalloc::Synchronized<poolalloc::Pool<int>> shared(4);
  shared.despawn(shared.spawn(1));
  (void)shared.spawn(2);
  const auto& view = shared;
  const std::size_t live = view.with_lock([](auto& pool) {
    static_assert(std::is_const_v<std::remove_reference_t<decltype(pool)>>);
    return pool.size();
  });
  EXPECT_EQ(live, 1u);
}

TEST(Synchronized, PrintsItsArenasLineUnderTheLock) {
  poolalloc::Synchronized<poolalloc::FixedPool> shared(64, 4);
  shared.with_lock([](poolalloc::FixedPool& pool) { pool.set_name("shared"); });
  (void)shared.allocate();
  std::ostringstream arena_line;
  shared.with_lock([&arena_line](const poolalloc::FixedPool& pool) { arena_line << pool; });
  std::ostringstream out;
  out << shared;
  EXPECT_EQ(out.str(), arena_line.str());
}

// A parent that may spawn its child when it is built and despawns it when it dies, through
// whatever wrapper shares their pool: the arena's call re-enters the wrapper on the same thread.
struct Parent {
  Parent() = default;
  explicit Parent(const std::function<void()>& spawn_child) { spawn_child(); }
  std::function<void()> despawn_child;
  ~Parent() {
    if (despawn_child) despawn_child();
  }
};

TEST(Synchronized, LetsAConstructorSpawnAndADestructorDespawnThroughItOnTheSameThread) {
  poolalloc::Synchronized<poolalloc::Pool<Parent>> shared(8);
  Parent* child = nullptr;
  Parent* parent = shared.spawn(std::function<void()>([&] { child = shared.spawn(); }));
  EXPECT_EQ(shared.with_lock([](const auto& pool) { return pool.size(); }), 2u);
  const auto handle = shared.with_lock([&](auto& pool) { return pool.handle_of(child); });
  parent->despawn_child = [&shared, handle] { shared.despawn(handle); };
  shared.despawn(parent);
  EXPECT_EQ(shared.with_lock([](const auto& pool) { return pool.size(); }), 0u);
}

TEST(Tracked, OverASynchronizedPoolLetsADestructorDespawnThroughItOnTheSameThread) {
  poolalloc::Synchronized<poolalloc::Pool<Parent>> shared(8);
  poolalloc::Tracked tracked(shared, 1024);
  Parent* child = tracked.spawn();
  Parent* parent = tracked.spawn();
  const auto handle = shared.with_lock([&](auto& pool) { return pool.handle_of(child); });
  parent->despawn_child = [&tracked, handle] { tracked.despawn(handle); };
  tracked.despawn(parent);
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.sampled_used(), 0u);
  EXPECT_EQ(tracked.peak(), 2 * sizeof(Parent));
}

// A tracker's row joins the list while the tracker is being built and leaves it while it is
// being destroyed: the printer must read nothing of the tracker but what its row keeps.
TEST(PrintBudgets, IsSafeWhileAnotherThreadCreatesUsesAndDestroysTrackers) {
  Step churning;
  std::atomic<bool> printed{false};
  std::thread churn([&] {
    poolalloc::FrameAllocator frame(1 << 16);
    std::deque<poolalloc::Tracked<poolalloc::FrameAllocator>> live;
    for (int i = 0; !printed; ++i) {
      poolalloc::Tracked<poolalloc::FrameAllocator>& tracked = live.emplace_back(frame, 64);
      tracked.set_name(i % 2 == 0 ? "even" : "odd");
      (void)tracked.allocate(1, 1);
      if (live.size() == 64) {
        live.pop_front();
        frame.reset();
      }
      if (i == 0) churning.set(1);
    }
  });
  churning.wait_for(1);
  std::size_t rows = 0;
  for (int i = 0; i < 2000; ++i) {
    std::ostringstream out;
    poolalloc::print_budgets(out);
    const std::string table = out.str();
    rows += static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')) - 1;
  }
  printed = true;
  churn.join();
  EXPECT_GT(rows, 0u);
}

// The name a tracker prints is read under the lock its set_name() takes.
TEST(Tracked, SharedByThreadsPrintsWhileAnotherThreadRenamesIt) {
  poolalloc::Synchronized<poolalloc::FixedPool> pool(64, 16);
  poolalloc::Tracked shared(pool, 64 * 8);
  shared.set_name("a");
  std::thread renamer([&] {
    for (int i = 0; i < 2000; ++i) shared.set_name(i % 2 == 0 ? "bullets shared by all" : "a");
  });
  for (int i = 0; i < 2000; ++i) {
    std::ostringstream line;
    line << shared;
    EXPECT_TRUE(line.str().starts_with("Tracked \"")) << line.str();
  }
  renamer.join();
  EXPECT_EQ(shared.name(), "a");
}

// Each call and the sample after it are made under the arena's lock, so the tracker's figures
// follow the calls of every thread in their order: its peak is the pool's own.
TEST(Tracked, SharedByThreadsOverASynchronizedArenaKeepsFiguresThatAgree) {
  poolalloc::Synchronized<poolalloc::Pool<std::uint64_t>> shared(kThreads * 100);
  std::atomic<std::size_t> calls{0};
  poolalloc::Tracked<poolalloc::Synchronized<poolalloc::Pool<std::uint64_t>>>* self = nullptr;
  poolalloc::Tracked tracked(shared, 50 * sizeof(std::uint64_t), [&](std::size_t, std::size_t) {
    (void)self->used();  // outside the lock, or this thread would take it twice
    ++calls;
  });
  self = &tracked;
  on_threads([&](int) {
    std::vector<std::uint64_t*> mine;
    for (int round = 0; round < 100; ++round) {
      for (std::uint64_t i = 0; i < 100; ++i) mine.push_back(tracked.spawn(i));
      for (std::uint64_t* p : mine) tracked.despawn(p);
      mine.clear();
    }
  });
  const std::size_t pool_peak =
      shared.with_lock([](const poolalloc::Pool<std::uint64_t>& pool) { return pool.peak(); });
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.sampled_used(), 0u);
  EXPECT_EQ(tracked.peak(), pool_peak * sizeof(std::uint64_t));
  EXPECT_EQ(tracked.end_frame(), tracked.peak());
  EXPECT_GE(calls, 1u);  // each thread's 100 objects alone are over the budget
  EXPECT_EQ(tracked.over_budget_count(), calls.load());
}

// print_budgets() reads live only the arenas of the trackers created on its own thread: another
// thread's arena is that thread's to read. Its figures are its last sample, until that thread
// samples them (sample_budgets(), a call through the tracker, end_frame()).
TEST(PrintBudgets, ShowsAnotherThreadsTrackersAsOfTheirLastSample) {
  Step step;
  std::thread owner([&] {
    poolalloc::FrameAllocator frame(1024);
    poolalloc::Tracked tracked(frame, 1024);
    tracked.set_name("job scratch");
    (void)tracked.allocate(100, 1);
    (void)frame.allocate(50, 1);  // on the arena: this thread's to sample
    step.set(1);
    step.wait_for(2);
    poolalloc::sample_budgets();
    step.set(3);
    step.wait_for(4);
  });
  step.wait_for(1);
  std::ostringstream before;
  poolalloc::print_budgets(before);
  EXPECT_EQ(before.str(),
            "arena                                   used        peak      budget  over\n"
            "job scratch                              100         100        1024     0\n");
  step.set(2);
  step.wait_for(3);
  std::ostringstream after;
  poolalloc::print_budgets(after);
  EXPECT_EQ(after.str(),
            "arena                                   used        peak      budget  over\n"
            "job scratch                              150         150        1024     0\n");
  step.set(4);
  owner.join();
}

// An arena whose usage, read once while the gate is armed, holds its reader inside the sample
// until the tracker is destroyed, or 200 ms: a destruction that does not wait for the sample
// ends first.
struct SampleGate {
  std::atomic<bool> armed{false};
  Step step;
  std::mutex mutex;
  std::condition_variable changed;
  bool destroyed = false;
  bool destroyed_during_sample = false;
};
struct GatedArena {
  SampleGate* gate;
  [[nodiscard]] std::size_t used() const {
    if (gate->armed.exchange(false)) {
      gate->step.set(1);
      std::unique_lock lock(gate->mutex);
      gate->changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return gate->destroyed; });
      gate->destroyed_during_sample = gate->destroyed;
    }
    return 0;
  }
};

// A tracker that threads share may be destroyed on any of them, also while its owner samples it
// (print_budgets(), sample_budgets()): the destruction waits for the sample to return. (It did
// not: the sample went on in the freed tracker, a use after free under AddressSanitizer.)
TEST(PrintBudgets, ATrackerDestroyedOnAnotherThreadWhileItsOwnerSamplesItWaitsForTheSample) {
  SampleGate gate;
  GatedArena arena{&gate};
  auto* tracked = new poolalloc::Tracked<GatedArena>(arena, 1024);
  gate.armed = true;
  std::thread destroyer([&] {
    gate.step.wait_for(1);
    delete tracked;
    const std::lock_guard lock(gate.mutex);
    gate.destroyed = true;
    gate.changed.notify_all();
  });
  poolalloc::sample_budgets();
  destroyer.join();
  EXPECT_TRUE(gate.destroyed);
  EXPECT_FALSE(gate.destroyed_during_sample);
}

// A sweep does not wait for a Synchronized arena's lock that another thread holds: it shows the
// row's last sample. That thread may destroy the tracker under the lock, and the destruction waits
// for a sample in progress: a sweep waiting for the lock meanwhile would wait forever (it did,
// once destructions waited for samples; before that, it sampled the freed tracker).
TEST(PrintBudgets, ShowsTheLastSampleOfASynchronizedArenaWhoseLockAnotherThreadHolds) {
  poolalloc::Synchronized<poolalloc::Pool<std::uint64_t>> pool(64);
  auto* tracked = new poolalloc::Tracked(pool, 1024);
  tracked->set_name("shared");
  (void)tracked->spawn(1);
  Step step;
  std::thread holder([&] {
    pool.with_lock([&](poolalloc::Pool<std::uint64_t>& inner) {
      (void)inner.spawn(2);  // on the arena: not sampled yet
      step.set(1);
      step.wait_for(2);
      delete tracked;  // under the lock
    });
  });
  step.wait_for(1);
  std::ostringstream out;
  poolalloc::print_budgets(out);
  step.set(2);
  holder.join();
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "shared                                     8           8        1024     0\n");
}

// As std::pmr::synchronized_pool_resource: one PoolResource behind a lock, a memory_resource
// itself, shared by the pmr containers of several threads.
TEST(SynchronizedResource, LetsThreadsSharePmrContainersOverOnePoolResource) {
  poolalloc::SynchronizedPoolResource shared;
  std::pmr::memory_resource* resource = &shared;
  on_threads([&](int t) {
    for (int round = 0; round < 20; ++round) {
      std::pmr::map<int, std::pmr::string> names(resource);
      std::pmr::list<int> order(resource);
      std::pmr::vector<int> ids(resource);
      for (int i = 0; i < 200; ++i) {
        names.emplace(i, std::pmr::string(40, static_cast<char>('a' + t)));
        order.push_back(i);
        ids.push_back(i * t);
      }
      ASSERT_EQ(names.size(), 200u);
      ASSERT_EQ(std::string_view(names.at(7)), std::string(40, static_cast<char>('a' + t)));
      ASSERT_EQ(ids[199], 199 * t);
    }
  });
  EXPECT_EQ(shared.with_lock([](const poolalloc::PoolResource& pool) { return pool.used(); }), 0u);
  EXPECT_TRUE(resource->is_equal(shared));
}

// A TrackedResource shared by threads counts each byte once and each rise above its budget once:
// all threads hold their blocks at once, one byte over the budget, once a round.
TEST(TrackedResource, SharedByThreadsCountsEveryByteAndEveryRiseOnce) {
  constexpr std::size_t kBlocks = 100;
  constexpr int kRounds = 50;
  constexpr std::size_t kAllHeld = kThreads * kBlocks * 8;
  poolalloc::SynchronizedPoolResource pool;
  std::atomic<int> calls{0};
  poolalloc::TrackedResource tracked(&pool, kAllHeld - 1,
                                     [&](std::size_t used, std::size_t budget) {
                                       EXPECT_GT(used, budget);
                                       ++calls;
                                     });
  Rendezvous all_held(kThreads);
  std::atomic<std::size_t> used_when_all_held{0};
  on_threads([&](int) {
    std::vector<void*> mine;
    for (int round = 0; round < kRounds; ++round) {
      for (std::size_t i = 0; i < kBlocks; ++i) mine.push_back(tracked.allocate(8, 8));
      all_held.arrive_and_wait();
      used_when_all_held = tracked.used();
      all_held.arrive_and_wait();
      for (void* p : mine) tracked.deallocate(p, 8, 8);
      mine.clear();
      all_held.arrive_and_wait();
    }
  });
  EXPECT_EQ(used_when_all_held, kAllHeld);
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.peak(), kAllHeld);
  EXPECT_EQ(tracked.over_budget_count(), std::size_t{kRounds});
  EXPECT_EQ(calls, kRounds);
  EXPECT_EQ(tracked.end_frame(), kAllHeld);
}

// The pool's interface, each call under the lock: threads resolve their handles through it.
TEST(Synchronized, ForwardsTheArenasInterfaceUnderTheLock) {
  poolalloc::Synchronized<poolalloc::Pool<std::uint64_t>> shared(kThreads * 100);
  shared.set_name("shared ids");
  on_threads([&](int t) {
    for (int round = 0; round < 100; ++round) {
      std::uint64_t* id = shared.spawn(static_cast<std::uint64_t>(t));
      const poolalloc::Handle<std::uint64_t> handle = shared.handle_of(id);
      ASSERT_EQ(shared.get(handle), id);
      ASSERT_EQ(*shared.get(handle), static_cast<std::uint64_t>(t));
      shared.despawn(handle);
      ASSERT_EQ(shared.get(handle), nullptr);
    }
  });
  EXPECT_EQ(shared.name(), "shared ids");
  EXPECT_EQ(shared.size(), 0u);
  EXPECT_EQ(shared.capacity(), std::size_t{kThreads} * 100);
  (void)shared.spawn(std::uint64_t{5});
  std::uint64_t sum = 0;
  shared.for_each([&](std::uint64_t value) { sum += value; });
  EXPECT_EQ(sum, 5u);
  shared.clear();
  EXPECT_EQ(std::as_const(shared).size(), 0u);
  poolalloc::Synchronized<poolalloc::FrameAllocator> frame(1024);
  EXPECT_NE(frame.new_object<std::uint64_t>(std::uint64_t{1}), nullptr);
  EXPECT_EQ(frame.used(), 8u);
  frame.reset();
  EXPECT_EQ(frame.used(), 0u);
}

}  // namespace
