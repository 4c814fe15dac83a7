#include <poolalloc/tracking.hpp>

#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/stack_allocator.hpp>

#include <gtest/gtest.h>

#include "address_text.hpp"

#include <cstdint>
#include <iomanip>
#include <locale>
#include <memory_resource>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using poolalloc::FixedPool;
using poolalloc::FrameAllocator;
using poolalloc::Pool;
using poolalloc::PoolResource;
using poolalloc::StackAllocator;
using poolalloc::StlAllocator;
using poolalloc::Tracked;
using poolalloc::TrackedResource;

TEST(Tracked, ReportsThePeakOfEachFrame) {
  FrameAllocator frame(1024);
  Tracked tracked(frame, 1024);
  (void)tracked.allocate(100, 1);
  (void)tracked.allocate(200, 1);
  EXPECT_EQ(tracked.end_frame(), 300u);
  frame.reset();
  (void)tracked.allocate(50, 1);
  EXPECT_EQ(tracked.end_frame(), 50u);
  frame.reset();
  EXPECT_EQ(tracked.end_frame(), 0u);
  EXPECT_EQ(tracked.peak(), 300u);
}

TEST(Tracked, CallsBackEachTimeUsageRisesAboveTheBudget) {
  FrameAllocator frame(1024);
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  Tracked tracked(frame, 100,
                  [&](std::size_t used, std::size_t budget) { calls.emplace_back(used, budget); });
  (void)tracked.allocate(100, 1);
  EXPECT_TRUE(calls.empty());  // at the budget is not over it
  (void)tracked.allocate(10, 1);
  (void)tracked.allocate(10, 1);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(std::size_t{110}, std::size_t{100}));
  frame.reset();
  (void)tracked.end_frame();
  (void)tracked.allocate(101, 1);
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_EQ(tracked.budget(), 100u);
}

TEST(Tracked, ACallbackThatAllocatesThroughItsArenaIsCalledOncePerRise) {
  FrameAllocator frame(1024);
  Tracked<FrameAllocator>* self = nullptr;
  int calls = 0;
  Tracked<FrameAllocator> tracked(frame, 100, [&](std::size_t, std::size_t) {
    ASSERT_LT(++calls, 3) << "the callback was entered again for the same rise";
    (void)self->allocate(16, 1);  // a debug overlay's own scratch memory, say
  });
  self = &tracked;
  (void)tracked.allocate(200, 1);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(tracked.over_budget_count(), 1u);
}

TEST(Tracked, CountsBytesOfPoolsAndTheirFrees) {
  FixedPool blocks(64, 8);
  Tracked tracked_blocks(blocks, 1024);
  void* a = tracked_blocks.allocate();
  (void)tracked_blocks.allocate();
  EXPECT_EQ(tracked_blocks.used(), 128u);
  tracked_blocks.deallocate(a);
  EXPECT_EQ(tracked_blocks.used(), 64u);
  EXPECT_EQ(tracked_blocks.peak(), 128u);

  struct Particle {
    float position[3];
  };
  Pool<Particle> particles(4);
  Tracked tracked_particles(particles, sizeof(Particle));
  Particle* p = tracked_particles.spawn();
  EXPECT_EQ(tracked_particles.used(), sizeof(Particle));
  particles.despawn(p);
  EXPECT_EQ(tracked_particles.used(), 0u);
  EXPECT_EQ(tracked_particles.peak(), sizeof(Particle));
}

TEST(Tracked, WrapsStacksAndResourcesAndServesContainers) {
  StackAllocator stack(256);
  Tracked tracked_stack(stack, 256);
  (void)tracked_stack.allocate(32);
  EXPECT_EQ(tracked_stack.peak(), 32u);
  EXPECT_EQ(&tracked_stack.arena(), &stack);

  PoolResource resource;
  Tracked tracked(resource, 1 << 20);
  {
    std::vector<int, StlAllocator<int, Tracked<PoolResource>>> values{
        StlAllocator<int, Tracked<PoolResource>>(tracked)};
    for (int i = 0; i < 10; ++i) values.push_back(i);
    EXPECT_EQ(tracked.used(), resource.used());
  }
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_GE(tracked.peak(), 10 * sizeof(int));
}

TEST(Tracked, CountsTheLiveObjectsOfAPoolAndTheLiveBlocksOfAFixedPoolOnly) {
  Pool<std::uint64_t> pool(64);
  Tracked tracked_pool(pool, 1024);
  (void)tracked_pool.spawn(std::uint64_t{1});
  EXPECT_EQ(tracked_pool.used(), sizeof(std::uint64_t));  // not the 63 free slots

  FixedPool blocks(64, 8, 16, poolalloc::Growth::fixed, poolalloc::DebugChecks::on);
  Tracked tracked_blocks(blocks, 1024);
  (void)tracked_blocks.allocate();
  EXPECT_EQ(tracked_blocks.used(), 64u);  // not the guard bytes around the block
}

TEST(Tracked, CountsTheAlignmentPaddingOfFramesAndStacks) {
  FrameAllocator frame(1024);
  Tracked tracked_frame(frame, 1024);
  (void)tracked_frame.allocate(1, 1);
  (void)tracked_frame.allocate(8, 8);
  EXPECT_EQ(tracked_frame.used(), 16u);

  StackAllocator stack(1024);
  Tracked tracked_stack(stack, 1024);
  (void)tracked_stack.allocate(1, 1);
  (void)tracked_stack.allocate(8, 8);
  EXPECT_EQ(tracked_stack.used(), 16u);
}

TEST(Tracked, CountsTheBytesRequestedOfAPoolResourceNotItsBlocks) {
  PoolResource resource;
  Tracked tracked(resource, 1 << 20);
  void* small = tracked.allocate(9, 1);  // served by a 16-byte block
  EXPECT_EQ(tracked.used(), 9u);
  void* large = tracked.allocate(1000, 8);  // upstream
  EXPECT_EQ(tracked.used(), 1009u);
  tracked.deallocate(small, 9, 1);
  tracked.deallocate(large, 1000, 8);
  EXPECT_EQ(tracked.used(), 0u);
}

TEST(Tracked, WrapsADoubleBufferedFrameAllocator) {
  poolalloc::DoubleBufferedFrameAllocator frames(1024);
  Tracked tracked(frames, 256);
  (void)tracked.allocate(200, 1);
  frames.swap_buffers();
  (void)tracked.allocate(300, 1);
  EXPECT_EQ(tracked.used(), 300u);  // the current frame's
  EXPECT_EQ(tracked.end_frame(), 300u);
  EXPECT_EQ(tracked.over_budget_count(), 1u);
}

TEST(Tracked, ForwardsDespawnAndSeesItsBytesGoBack) {
  Pool<std::uint64_t> pool(4);
  Tracked tracked(pool, 64);
  std::uint64_t* value = tracked.spawn(std::uint64_t{7});
  EXPECT_EQ(tracked.used(), 8u);
  tracked.despawn(value);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(tracked.used(), 0u);
  const auto handle = pool.handle_of(tracked.spawn(std::uint64_t{8}));
  tracked.despawn(handle);
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.end_frame(), 8u);
}

TEST(Tracked, CountsEachRiseAboveTheBudget) {
  FrameAllocator frame(1024);
  Tracked tracked(frame, 100);
  (void)tracked.allocate(150, 1);
  (void)tracked.allocate(10, 1);  // still over: not a new rise
  frame.reset();
  (void)tracked.end_frame();
  (void)tracked.allocate(101, 1);
  EXPECT_EQ(tracked.over_budget_count(), 2u);
}

TEST(Tracked, CountsAFrameOverBudgetInEveryFrameResetAfterEndFrame) {
  FrameAllocator frame(1 << 20);
  int calls = 0;
  Tracked tracked(frame, 64 * 1024, [&](std::size_t, std::size_t) { ++calls; });
  for (int f = 0; f < 3; ++f) {
    (void)tracked.allocate(100 * 1000);
    EXPECT_EQ(tracked.end_frame(), 100u * 1000);
    frame.reset();  // behind the tracker's back, as the documented pattern does
  }
  EXPECT_EQ(tracked.over_budget_count(), 3u);
  EXPECT_EQ(calls, 3);
}

TEST(Tracked, CountsARiseAboveTheBudgetAfterDespawnsMadeOnThePool) {
  Pool<std::uint64_t> pool(16);
  Tracked tracked(pool, 4);
  for (int round = 0; round < 3; ++round) pool.despawn(tracked.spawn(std::uint64_t{1}));
  EXPECT_EQ(tracked.over_budget_count(), 3u);
}

// pmr containers on the resource itself reach it by no call through the tracker: its queries
// sample the resource, so its peak is never below its usage and the rise is counted.
TEST(Tracked, OverAPoolResourceUsedByPmrContainersShowsAPeakNeverBelowItsUsage) {
  PoolResource resource;
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  Tracked tracked(resource, 64,
                  [&](std::size_t used, std::size_t budget) { calls.emplace_back(used, budget); });
  std::pmr::vector<int> ids(&resource);
  ids.reserve(32);  // 128 bytes
  EXPECT_EQ(tracked.peak(), 128u);
  EXPECT_EQ(tracked.used(), 128u);
  EXPECT_EQ(tracked.over_budget_count(), 1u);
  EXPECT_EQ(calls, (std::vector<std::pair<std::size_t, std::size_t>>{{128, 64}}));
  ids = std::pmr::vector<int>(&resource);
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.peak(), 128u);
  EXPECT_EQ(tracked.end_frame(), 128u);
}

// Whatever path the memory took, each query agrees with the others.
TEST(Tracked, NeverContradictsItselfWhenItsArenaIsUsedDirectly) {
  Pool<std::uint64_t> pool(16);
  Tracked tracked(pool, 4 * sizeof(std::uint64_t));
  std::vector<std::uint64_t*> spawned;
  for (std::uint64_t i = 0; i < 8; ++i) spawned.push_back(pool.spawn(i));
  EXPECT_EQ(tracked.over_budget_count(), 1u);
  EXPECT_EQ(tracked.peak(), 64u);
  for (std::uint64_t* p : spawned) pool.despawn(p);
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.peak(), 64u);
}

// A Tracked over a memory_resource is one: pmr containers allocate through it, each call sampled.
TEST(Tracked, OverAMemoryResourceIsOneThatPmrContainersAllocateThrough) {
  PoolResource resource;
  Tracked tracked(resource, 64);
  std::pmr::memory_resource* through = &tracked;
  {
    std::pmr::vector<int> ids(through);
    ids.reserve(16);
    EXPECT_EQ(tracked.sampled_used(), 64u);
    ids.reserve(32);
    EXPECT_EQ(tracked.sampled_used(), 128u);
    EXPECT_EQ(tracked.over_budget_count(), 1u);
  }
  EXPECT_EQ(tracked.sampled_used(), 0u);
  EXPECT_EQ(resource.used(), 0u);
  EXPECT_TRUE(through->is_equal(tracked));
  EXPECT_FALSE(through->is_equal(resource));
}

TEST(PrintBudgets, ListsEveryLiveTrackedArenaWithItsFigures) {
  FrameAllocator frame(1024);
  FixedPool blocks(64, 8);
  std::ostringstream out;
  {
    Tracked tracked_frame(frame, 100);
    tracked_frame.set_name("render scratch");
    Tracked tracked_blocks(blocks, 1024);
    (void)tracked_frame.allocate(150, 1);
    frame.reset();
    (void)tracked_frame.allocate(40, 1);
    poolalloc::print_budgets(out);
  }
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "render scratch                            40         150         100     1\n"
            "(unnamed)                                  0           0        1024     0\n");
  std::ostringstream after;
  poolalloc::print_budgets(after);  // the trackers are gone, and so are their rows
  EXPECT_EQ(after.str(),
            "arena                                   used        peak      budget  over\n");
}

TEST(PrintBudgets, KeepsTheColumnsAlignedForNamesOfAnyLength) {
  FrameAllocator frame(1024);
  Tracked tracked(frame, 100);
  tracked.set_name("a name of thirty-one characters and more");  // 31 of them are kept
  (void)tracked.allocate(40, 1);
  std::ostringstream out;
  poolalloc::print_budgets(out);
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "a name of thirty-one characters           40          40         100     0\n");
}

TEST(PrintBudgets, ShowsTheControlCharactersOfANameAsQuestionMarks) {
  FrameAllocator frame(1024);
  Tracked tracked(frame, 100);
  tracked.set_name("line\nbreak\x1b[31m");
  std::ostringstream out;
  poolalloc::print_budgets(out);
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "line?break?[31m                            0           0         100     0\n");
}

TEST(Tracked, KeepsAtMost31BytesOfANameCutAtAUtf8CharacterBoundary) {
  FrameAllocator frame(1024);
  Tracked tracked(frame, 4096);
  tracked.set_name("ＵＩ　テクスチャ　アトラス");      // 13 characters of 3 bytes each: 39 bytes
  EXPECT_EQ(tracked.name(), "ＵＩ　テクスチャ　ア");   // 10 of them, 30 bytes
  tracked.set_name("twenty-eight bytes of ASCII Ｕ");  // 31 bytes: kept whole
  EXPECT_EQ(tracked.name(), "twenty-eight bytes of ASCII Ｕ");
  tracked.set_name("twenty-nine bytes of ASCII,  Ｕ");  // 32 bytes: the last character goes
  EXPECT_EQ(tracked.name(), "twenty-nine bytes of ASCII,  ");
}

// A budget table once showed `0 used` with 108 objects live: they were spawned on the pool, not
// through the tracker. print_budgets() samples the arenas of its thread's trackers first.
TEST(PrintBudgets, ShowsEachArenasRealUsageAtTheMomentItPrints) {
  Pool<std::uint64_t> enemies(256);
  std::size_t calls = 0;
  Tracked tracked(enemies, 800, [&](std::size_t, std::size_t) { ++calls; });
  tracked.set_name("enemies");
  FrameAllocator frame(1024);
  Tracked scratch(frame, 1024);
  scratch.set_name("scratch");
  (void)scratch.allocate(100, 1);
  for (std::uint64_t i = 0; i < 108; ++i) (void)enemies.spawn(i);
  (void)frame.allocate(50, 1);
  std::ostringstream out;
  poolalloc::print_budgets(out);
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "enemies                                  864         864         800     1\n"
            "scratch                                  150         150        1024     0\n");
  EXPECT_EQ(calls, 1u);
  enemies.clear();
  frame.reset();
  poolalloc::sample_budgets();  // the same samples, without printing
  EXPECT_EQ(tracked.sampled_used(), 0u);
  EXPECT_EQ(scratch.sampled_used(), 0u);
}

TEST(TrackedResource, ShowsPmrContainersInTheBudgetsWithFiguresThatAgree) {
  PoolResource pool;
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  TrackedResource tracked(
      &pool, 64, [&](std::size_t used, std::size_t budget) { calls.emplace_back(used, budget); });
  tracked.set_name("ui");
  {
    std::pmr::vector<int> values(&tracked);
    values.reserve(16);  // 64 bytes: at the budget is not over it
    values.reserve(32);  // 128 more while the 64 are held, then the 64 go back
    EXPECT_EQ(tracked.used(), 128u);
    EXPECT_EQ(pool.used(), 128u);
    EXPECT_EQ(tracked.peak(), 192u);
    EXPECT_EQ(tracked.over_budget_count(), 1u);
    EXPECT_EQ(calls, (std::vector<std::pair<std::size_t, std::size_t>>{{192, 64}}));
    std::ostringstream out;
    poolalloc::print_budgets(out);
    EXPECT_EQ(out.str(),
              "arena                                   used        peak      budget  over\n"
              "ui                                       128         192          64     1\n");
  }
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.end_frame(), 192u);
  EXPECT_EQ(tracked.end_frame(), 0u);
}

TEST(TrackedResource, CountsTheBytesRequestedThroughItOverAnyUpstream) {
  std::pmr::monotonic_buffer_resource monotonic;
  FrameAllocator frame(1024);
  poolalloc::FrameResource frame_resource(frame);
  for (std::pmr::memory_resource* upstream :
       {std::pmr::new_delete_resource(), static_cast<std::pmr::memory_resource*>(&monotonic),
        static_cast<std::pmr::memory_resource*>(&frame_resource)}) {
    TrackedResource tracked(upstream, 1024);
    EXPECT_EQ(tracked.upstream(), upstream);
    void* p = tracked.allocate(100, 8);
    EXPECT_EQ(tracked.used(), 100u);
    tracked.deallocate(p, 100, 8);  // counted as given back, whatever the upstream does with it
    EXPECT_EQ(tracked.used(), 0u);
    EXPECT_EQ(tracked.peak(), 100u);
  }
}

TEST(Tracked, PrintsItsFiguresThenItsArenasLineInOneLine) {
  Pool<std::uint64_t> pool(4);
  pool.set_name("ids");
  Tracked tracked(pool, 8);
  tracked.set_name("id budget");
  std::uint64_t* first = tracked.spawn(std::uint64_t{1});
  (void)tracked.spawn(std::uint64_t{2});
  tracked.despawn(first);
  std::ostringstream arena_line;
  arena_line << pool;
  std::ostringstream out;
  out << tracked;
  EXPECT_EQ(out.str(),
            "Tracked \"id budget\" (budget 8 B): 8 B used, peak 16 B, over budget 1 time; " +
                arena_line.str());

  Tracked unnamed(pool, 64);
  std::ostringstream unnamed_out;
  unnamed_out << unnamed;
  EXPECT_EQ(unnamed_out.str(), "Tracked " + hex(&unnamed) +
                                   " (budget 64 B): 8 B used, peak 8 B, over budget 0 times; " +
                                   arena_line.str());
}

TEST(TrackedResource, PrintsItsFiguresInOneLine) {
  TrackedResource tracked(std::pmr::new_delete_resource(), 64);
  tracked.set_name("ui");
  tracked.deallocate(tracked.allocate(100), 100);
  std::ostringstream out;
  out << tracked;
  EXPECT_EQ(out.str(),
            "TrackedResource \"ui\" (budget 64 B): 0 B used, peak 100 B, over budget 1 time");
}

using TrackedDeathTest = ::testing::Test;

TEST_F(TrackedDeathTest, AnOverBudgetCallbackThatThrowsEndsTheProgram) {
  const auto throwing = [](std::size_t, std::size_t) {
    throw std::runtime_error("the budget callback threw");
  };
  FrameAllocator frame(1024);
  Tracked tracked(frame, 64, throwing);
  EXPECT_DEATH((void)tracked.allocate(100), "the budget callback threw");
  TrackedResource resource(std::pmr::new_delete_resource(), 64, throwing);
  EXPECT_DEATH(resource.deallocate(resource.allocate(100), 100), "the budget callback threw");
}

TEST(PrintBudgets, PrintsInDecimalPaddedWithSpacesWhateverTheStreamWasLeftIn) {
  FrameAllocator frame(2048);
  Tracked tracked(frame, 65536);
  tracked.set_name("frame");
  (void)tracked.allocate(1000, 1);
  std::ostringstream out;
  out << std::hex << std::setfill('*') << std::left;
  poolalloc::print_budgets(out);
  out << 255;  // the stream as the caller left it
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "frame                                   1000        1000       65536     0\n"
            "ff");
}

TEST(PrintBudgets, KeepsASpaceBetweenColumnsWhateverTheWidthOfAFigure) {
  FrameAllocator frame(1024);
  Tracked unlimited(frame, SIZE_MAX);
  unlimited.set_name("no budget");
  (void)unlimited.allocate(10, 1);
  std::ostringstream out;
  poolalloc::print_budgets(out);
  EXPECT_EQ(
      out.str(),
      "arena                                   used        peak      budget  over\n"
      "no budget                                 10          10 18446744073709551615     0\n");
}

// A locale that groups digits by thousands, as a UI's locale may.
struct ThousandsGrouping : std::numpunct<char> {
  std::string do_grouping() const override { return "\3"; }
  char do_thousands_sep() const override { return ','; }
};

TEST(PrintBudgets, PrintsFiguresWithoutTheStreamsDigitGroupingAndLeavesItsLocale) {
  FrameAllocator frame(2048);
  Tracked tracked(frame, 65536);
  tracked.set_name("frame");
  (void)tracked.allocate(1000, 1);
  std::ostringstream out;
  out.imbue(std::locale(std::locale::classic(), new ThousandsGrouping));
  poolalloc::print_budgets(out);
  out << 4096;  // the stream's own locale again
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "frame                                   1000        1000       65536     0\n"
            "4,096");
}

TEST(Tracked, PrintsFiguresWithoutTheStreamsDigitGroupingAndLeavesItsLocale) {
  FrameAllocator frame(2048);
  Tracked tracked(frame, 65536);
  tracked.set_name("frame");
  (void)tracked.allocate(1000, 1);
  std::ostringstream out;
  out.imbue(std::locale(std::locale::classic(), new ThousandsGrouping));
  out << tracked << " " << 4096;
  EXPECT_EQ(out.str(),
            "Tracked \"frame\" (budget 65536 B): 1000 B used, peak 1000 B, over budget 0 times; "
            "FrameAllocator \"frame\": 1000 of 2048 B used, peak 1000 B 4,096");
}

TEST(Tracked, PrintsInDecimalWhateverTheStreamWasLeftIn) {
  FrameAllocator frame(2048);
  Tracked tracked(frame, 65536);
  tracked.set_name("frame");
  frame.set_name("scratch");
  (void)tracked.allocate(1000, 1);
  std::ostringstream out;
  out << std::hex << tracked << " " << 255;
  EXPECT_EQ(out.str(),
            "Tracked \"frame\" (budget 65536 B): 1000 B used, peak 1000 B, over budget 0 times; "
            "FrameAllocator \"scratch\": 1000 of 2048 B used, peak 1000 B ff");
  TrackedResource resource(std::pmr::new_delete_resource(), 64);
  resource.set_name("ui");
  resource.deallocate(resource.allocate(100), 100);
  std::ostringstream resource_out;
  resource_out << std::hex << resource << " " << 255;
  EXPECT_EQ(resource_out.str(),
            "TrackedResource \"ui\" (budget 64 B): 0 B used, peak 100 B, over budget 1 time ff");
}

// Tracked and Synchronized forward what the wrapped arena has (requires-clauses): a tracker over
// a Pool<T> resolves handles, one over a frame resets it, sampled.
template <class Wrapper>
concept ForwardsGet = requires(Wrapper& wrapper) {
  wrapper.get(poolalloc::Handle<int>());
};
template <class Wrapper>
concept ForwardsReset = requires(Wrapper& wrapper) {
  wrapper.reset();
};
static_assert(ForwardsGet<Tracked<Pool<int>>> && !ForwardsGet<Tracked<FrameAllocator>>);
static_assert(ForwardsReset<Tracked<FrameAllocator>> && !ForwardsReset<Tracked<Pool<int>>>);
static_assert(ForwardsGet<poolalloc::Synchronized<Pool<int>>>);
static_assert(!ForwardsReset<poolalloc::Synchronized<Pool<int>>>);

// Both forward a Pool<T>'s load and its walk with handles: spawn_at and each.
template <class Wrapper>
concept ForwardsSpawnAtAndEach = requires(Wrapper& wrapper) {
  wrapper.spawn_at(poolalloc::Handle<int>(), 1);
  wrapper.each([](poolalloc::Handle<int>, int&) {});
};
static_assert(ForwardsSpawnAtAndEach<Tracked<Pool<int>>>);
static_assert(ForwardsSpawnAtAndEach<poolalloc::Synchronized<Pool<int>>>);

TEST(Tracked, OverAPoolForwardsSpawnAtSampledAsSpawnEachAndRangeFor) {
  Pool<int> saved(4);
  const poolalloc::Handle<int> handle = saved.handle_of(saved.spawn(7));
  Pool<int> pool(4);
  Tracked tracked(pool, 1024);
  ASSERT_NE(tracked.spawn_at(handle, 7), nullptr);
  EXPECT_EQ(tracked.sampled_used(), sizeof(int));  // sampled after the call, as spawn
  std::vector<poolalloc::Handle<int>> handles;
  tracked.each([&](poolalloc::Handle<int> each_handle, int&) { handles.push_back(each_handle); });
  EXPECT_EQ(handles, std::vector{handle});
  int sum = 0;
  for (const int value : tracked) sum += value;
  for (const int value : std::as_const(tracked)) sum += value;
  EXPECT_EQ(sum, 14);
}

TEST(Synchronized, OverAPoolForwardsSpawnAtAndEach) {
  Pool<int> saved(4);
  const poolalloc::Handle<int> handle = saved.handle_of(saved.spawn(7));
  poolalloc::Synchronized<Pool<int>> pool(4);
  ASSERT_NE(pool.spawn_at(handle, 7), nullptr);
  EXPECT_EQ(*pool.get(handle), 7);
  std::vector<poolalloc::Handle<int>> handles;
  pool.each([&](poolalloc::Handle<int> each_handle, int&) { handles.push_back(each_handle); });
  std::as_const(pool).each(
      [&](poolalloc::Handle<int> each_handle, const int&) { handles.push_back(each_handle); });
  EXPECT_EQ(handles, (std::vector{handle, handle}));
}

// A tracker that threads share over a Synchronized pool walks it with a function that changes
// the objects: the const overloads of for_each and each, which such a function cannot take, drop
// out of overload resolution rather than failing to compile (they compiled the pool's const walk
// with it, through the Synchronized's deduced return type).
TEST(Tracked, OverASynchronizedPoolWalksWithAFunctionThatChangesTheObjects) {
  poolalloc::Synchronized<Pool<int>> pool(4);
  Tracked tracked(pool, 1024);
  ASSERT_NE(tracked.spawn(1), nullptr);
  tracked.for_each([](int& value) { value += 1; });
  tracked.for_each([](auto& value) { value += 1; });
  tracked.each([](poolalloc::Handle<int>, int& value) { value += 1; });
  tracked.each([](poolalloc::Handle<int>, auto& value) { value += 1; });
  int sum = 0;
  std::as_const(tracked).for_each([&](const int& value) { sum += value; });
  EXPECT_EQ(sum, 5);
}

TEST(Tracked, ForwardsTheArenasInterfaceAndSamplesWhatChangesUsage) {
  Pool<int> pool(8);
  Tracked tracked(pool, 1024);
  tracked.set_name("ids");  // the tracker's name and the pool's
  EXPECT_EQ(pool.name(), "ids");
  int* first = tracked.spawn(1);
  int* second = tracked.spawn(2);
  const poolalloc::Handle<int> handle = tracked.handle_of(second);
  EXPECT_EQ(tracked.get(handle), second);
  tracked.despawn(first);
  EXPECT_EQ(tracked.compact(), 1u);
  EXPECT_EQ(*tracked.get(handle), 2);
  int sum = 0;
  tracked.for_each([&](int value) { sum += value; });
  EXPECT_EQ(sum, 2);
  EXPECT_EQ(tracked.size(), 1u);
  EXPECT_EQ(tracked.capacity(), 8u);
  tracked.clear();  // sampled
  EXPECT_EQ(tracked.sampled_used(), 0u);

  FrameAllocator frame(1024);
  Tracked scratch(frame, 1024);
  EXPECT_NE(scratch.new_object<std::uint64_t>(7u), nullptr);
  EXPECT_EQ(scratch.sampled_used(), 8u);
  scratch.reset();
  EXPECT_EQ(scratch.sampled_used(), 0u);
  EXPECT_EQ(scratch.end_frame(), 8u);

  StackAllocator stack(1024);
  Tracked level(stack, 1024);
  const StackAllocator::Marker bottom = level.marker();
  (void)level.allocate(100, 1);
  level.free_to_marker(bottom);
  EXPECT_EQ(level.sampled_used(), 0u);
  EXPECT_EQ(level.end_frame(), 100u);
}

// The tracker moved into takes the arena, the budget, the callback, the name and the figures, with
// a row of its own, last in print_budgets(); the one moved from leaves the table.
TEST(TrackedMove, TakesTheArenaFiguresAndRowAndTheOneMovedFromLeavesTheTable) {
  FrameAllocator frame(1024);
  std::size_t calls = 0;
  std::vector<Tracked<FrameAllocator>> trackers;
  trackers.emplace_back(frame, 100, [&](std::size_t, std::size_t) { ++calls; });
  trackers.back().set_name("scratch");
  (void)trackers.back().allocate(150, 1);
  trackers.emplace_back(frame, 4096);  // the vector moves the first one as it grows
  trackers.back().set_name("other");
  Tracked<FrameAllocator>& moved = trackers.front();
  EXPECT_EQ(&moved.arena(), &frame);
  EXPECT_EQ(moved.name(), "scratch");
  EXPECT_EQ(frame.name(), "other");  // the last name either tracker gave it
  frame.reset();
  (void)moved.allocate(200, 1);
  EXPECT_EQ(calls, 2u);
  EXPECT_EQ(moved.over_budget_count(), 2u);
  std::ostringstream out;
  poolalloc::print_budgets(out);
  EXPECT_EQ(out.str(),
            "arena                                   used        peak      budget  over\n"
            "other                                    200         200        4096     0\n"
            "scratch                                  200         200         100     2\n");
}

}  // namespace
