// Threads of every kind Windows has, on libpoolalloc.a (mingw-w64, run under wine), at the
// default options: 64 threads that free each other's blocks and exit holding cached ones; threads
// of CreateThread that never call into the C++ runtime, of _beginthreadex, ended by ExitThread;
// and a thread ended by TerminateThread, whose cache no exit callback flushes; fibers deleted on
// the thread that made its cache in them and on another thread.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <process.h>
#include <windows.h>

#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

std::uint64_t live_caches() {
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  return stats.thread_caches;
}

std::uint64_t pooled_live() {
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  return stats.pooled_live;
}

// 64 threads each allocate blocks of random sizes, hand half of them to the next thread through
// a slot each, free the ones the previous thread handed them, and exit with blocks in their
// caches: afterwards every block is back and every cache is gone.
TEST(WindowsThreads, SixtyFourThreadsFreeEachOthersBlocksAndExitHoldingCachedOnes) {
  constexpr int kThreads = 64;
  constexpr int kBlocks = 2000;
  const std::uint32_t seed = 27;
  std::printf("seed %u\n", seed);
  const std::uint64_t caches_before = live_caches();
  const std::uint64_t live_before = pooled_live();
  {  // the test's own vectors are gone before the counts are read
    std::vector<std::vector<void*>> handed(kThreads);
    std::atomic<int> allocated{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 random(seed + t);
        std::vector<void*> mine;
        for (int i = 0; i < kBlocks; ++i) {
          void* p = ::operator new(16 + random() % 2000);
          static_cast<char*>(p)[0] = static_cast<char>(t);
          (i % 2 == 0 ? handed[t] : mine).push_back(p);
        }
        for (void* p : mine) ::operator delete(p);  // these stay in the thread's cache, partly
        allocated.fetch_add(1);
        while (allocated.load() < kThreads) std::this_thread::yield();
        for (void* p : handed[(t + 1) % kThreads]) ::operator delete(p);  // another thread's
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_EQ(pooled_live(), live_before);
  EXPECT_EQ(live_caches(), caches_before);
}

DWORD WINAPI allocate_without_the_cxx_runtime(void* out) {
  void* p = poolalloc_malloc(48);
  *static_cast<void**>(out) = p;
  return poolalloc_owns(p) ? 0 : 1;
}

TEST(WindowsThreads, AThreadOfCreateThreadThatNeverCallsTheCxxRuntimeGivesItsCacheBackAtExit) {
  const std::uint64_t caches_before = live_caches();
  void* block = nullptr;
  HANDLE thread = CreateThread(nullptr, 0, allocate_without_the_cxx_runtime, &block, 0, nullptr);
  ASSERT_NE(thread, nullptr);
  WaitForSingleObject(thread, INFINITE);
  DWORD code = 2;
  GetExitCodeThread(thread, &code);
  CloseHandle(thread);
  EXPECT_EQ(code, 0u);
  EXPECT_EQ(live_caches(), caches_before);
  poolalloc_free(block);
}

unsigned __stdcall allocate_and_end_thread(void* how) {
  void* kept = poolalloc_malloc(96);
  poolalloc_free(kept);  // in the thread's cache
  if (how != nullptr) ExitThread(0);
  _endthreadex(0);
  return 0;
}

TEST(WindowsThreads, ThreadsOfBeginthreadexEndedByExitThreadOrEndthreadexGiveTheirCachesBack) {
  const std::uint64_t caches_before = live_caches();
  const std::uint64_t live_before = pooled_live();
  int exit_thread = 1;
  for (void* how : {static_cast<void*>(nullptr), static_cast<void*>(&exit_thread)}) {
    auto thread = reinterpret_cast<HANDLE>(
        _beginthreadex(nullptr, 0, allocate_and_end_thread, how, 0, nullptr));
    ASSERT_NE(thread, nullptr);
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
  }
  EXPECT_EQ(live_caches(), caches_before);
  EXPECT_EQ(pooled_live(), live_before);
}

DWORD WINAPI allocate_and_wait(void* ready) {
  void* kept = poolalloc_malloc(112);
  poolalloc_free(kept);  // in the thread's cache, which no exit callback will flush
  SetEvent(static_cast<HANDLE>(ready));
  Sleep(INFINITE);
  return 0;
}

// No callback runs for a thread that TerminateThread ends: its cache stays registered until a
// decay step finds its thread gone (os_thread_exited) and flushes it. malloc_trim is not on
// Windows, so the steps that this thread's own calls run are waited for.
TEST(WindowsThreads, ACacheOfAThreadEndedByTerminateThreadIsReapedByALaterDecayStep) {
  const std::uint64_t caches_before = live_caches();
  HANDLE ready = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  HANDLE thread = CreateThread(nullptr, 0, allocate_and_wait, ready, 0, nullptr);
  WaitForSingleObject(ready, INFINITE);
  EXPECT_EQ(live_caches(), caches_before + 1);
  TerminateThread(thread, 0);
  WaitForSingleObject(thread, INFINITE);
  CloseHandle(thread);
  CloseHandle(ready);
  // Decay steps run on this thread's calls, once a step interval (a third of a second) passed.
  const ULONGLONG deadline = GetTickCount64() + 10000;
  while (live_caches() != caches_before && GetTickCount64() < deadline) {
    for (int i = 0; i < 100000; ++i) poolalloc_free(poolalloc_malloc(64));
    SwitchToThread();
  }
  EXPECT_EQ(live_caches(), caches_before);
}

// Destructors of thread_local objects run after the thread's exit callback: what they free and
// allocate goes to the central lists, and leaves no cache of the dead thread behind.
struct FreesAtThreadExit {
  void* block = nullptr;
  ~FreesAtThreadExit() {
    poolalloc_free(block);
    poolalloc_free(poolalloc_malloc(64));
  }
};
thread_local FreesAtThreadExit t_frees_at_exit;

DWORD WINAPI allocate_for_a_thread_local(void*) {
  t_frees_at_exit.block = poolalloc_malloc(64);
  return 0;
}

TEST(WindowsThreads, AThreadLocalsDestructorThatAllocatesAndFreesLeavesNoCacheOfTheDeadThread) {
  const std::uint64_t caches_before = live_caches();
  const std::uint64_t live_before = pooled_live();
  for (int i = 0; i < 8; ++i) {
    HANDLE thread = CreateThread(nullptr, 0, allocate_for_a_thread_local, nullptr, 0, nullptr);
    ASSERT_NE(thread, nullptr);
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
  }
  EXPECT_EQ(live_caches(), caches_before);
  EXPECT_EQ(pooled_live(), live_before);
}

// thread_local objects of std::thread's threads, each owning a block of the pools, as an engine's
// worker keeps a scratch string: every one is intact when its destructor runs. The allocator's
// own thread-local words must not live in mingw-w64's emulated storage, which a thread's exit
// frees before these destructors run: a read of one then made a fresh block of the C runtime,
// often the storage just freed of one of these objects, and its write corrupted it.
struct OwnsAString {
  static constexpr std::uint64_t kIntact = 0x600dc0de600dc0de;
  std::uint64_t mark = kIntact;
  std::string text;
  ~OwnsAString() {
    if (mark != kIntact) broken.fetch_add(1);
  }
  static inline std::atomic<int> broken{0};
};
thread_local OwnsAString t_scratch;
thread_local OwnsAString t_name;

TEST(WindowsThreads, TheAllocatorWritesNothingIntoTheThreadLocalObjectsOfStdThreads) {
  for (int i = 0; i < 32; ++i) {
    std::thread([i] {
      t_scratch.text.assign(64 + i, 's');
      t_name.text.assign(100 + i, 'n');
      for (int k = 0; k < 100; ++k) poolalloc_free(poolalloc_malloc(64 + k));
    }).join();
  }
  EXPECT_EQ(OwnsAString::broken.load(), 0);
}

// A tag pushed by the destructor of a thread_local object. A thread of std::thread that returns
// destroys its thread_local objects before its exit gives the cache, where the tag stack lives,
// back: the push works as anywhere. A thread of CreateThread or _beginthreadex, and one ended by
// ExitThread, destroys them after: the push is refused with ENOMEM, and what the destructor
// allocates is untagged.
struct PushesATagAtThreadExit {
  static inline int tag = 0;
  static inline int pushed = 0;
  static inline int error = 0;
  static inline std::uint64_t tag_blocks_at_exit = 0;
  void* touched = nullptr;
  ~PushesATagAtThreadExit() {
    errno = 0;
    pushed = poolalloc_tag_push(tag);
    error = errno;
    void* block = poolalloc_malloc(48);
    poolalloc_tag_stats stats{};
    poolalloc_get_tag_stats(tag, &stats);
    tag_blocks_at_exit = stats.live_blocks;
    poolalloc_free(block);
    if (pushed == 0) poolalloc_tag_pop();
  }
};
thread_local PushesATagAtThreadExit t_pushes_at_exit;

DWORD WINAPI touch_the_tag_pusher(void*) {
  t_pushes_at_exit.touched = poolalloc_malloc(16);
  poolalloc_free(t_pushes_at_exit.touched);
  return 0;
}

unsigned __stdcall touch_the_tag_pusher_and_return(void* exit_thread) {
  touch_the_tag_pusher(nullptr);
  if (exit_thread != nullptr) ExitThread(0);
  return 0;
}

void expect_the_push_refused_with_enomem_and_untagged(HANDLE thread) {
  ASSERT_NE(thread, nullptr);
  WaitForSingleObject(thread, INFINITE);
  CloseHandle(thread);
  EXPECT_EQ(PushesATagAtThreadExit::pushed, -1);
  EXPECT_EQ(PushesATagAtThreadExit::error, ENOMEM);
  EXPECT_EQ(PushesATagAtThreadExit::tag_blocks_at_exit, 0u);
}

TEST(WindowsTags, ATagPushedByAThreadLocalsDestructorIsChargedOrRefusedWithEnomemAndUntagged) {
  PushesATagAtThreadExit::tag = poolalloc_tag_register("thread-local destructor");
  ASSERT_GT(PushesATagAtThreadExit::tag, 0);
  std::thread([] { touch_the_tag_pusher(nullptr); }).join();
  EXPECT_EQ(PushesATagAtThreadExit::pushed, 0);
  EXPECT_EQ(PushesATagAtThreadExit::tag_blocks_at_exit, 1u);

  expect_the_push_refused_with_enomem_and_untagged(
      CreateThread(nullptr, 0, touch_the_tag_pusher, nullptr, 0, nullptr));
  int exit_thread = 1;
  for (void* how : {static_cast<void*>(nullptr), static_cast<void*>(&exit_thread)}) {
    expect_the_push_refused_with_enomem_and_untagged(reinterpret_cast<HANDLE>(
        _beginthreadex(nullptr, 0, touch_the_tag_pusher_and_return, how, 0, nullptr)));
  }
}

// A thread's first allocation runs in a fiber, which is deleted later, by the thread itself or by
// another: the fiber's callback must not take the cache from the living thread, and the thread's
// exit still gives it back.
struct FiberThread {
  void* thread_fiber = nullptr;
  void* first_fiber = nullptr;  // where the thread's first allocation runs
  HANDLE first_allocated = nullptr;
  HANDLE fiber_deleted = nullptr;  // set: another thread deletes the fiber
  std::uint64_t caches_after_deletion = 0;
};

void WINAPI allocate_first_in_a_fiber(void* context) {
  poolalloc_free(poolalloc_malloc(48));
  SwitchToFiber(static_cast<FiberThread*>(context)->thread_fiber);
}

// Slow paths of the thread's own: refills and flushes of its bin.
void allocate_and_free_many() {
  static thread_local void* blocks[1000];
  for (int round = 0; round < 10; ++round) {
    for (void*& block : blocks) block = poolalloc_malloc(48);
    for (void* block : blocks) poolalloc_free(block);
  }
}

DWORD WINAPI run_a_fiber_then_delete_it(void* context) {
  auto* run = static_cast<FiberThread*>(context);
  run->thread_fiber = ConvertThreadToFiber(nullptr);
  run->first_fiber = CreateFiber(0, allocate_first_in_a_fiber, run);
  SwitchToFiber(run->first_fiber);
  if (run->fiber_deleted == nullptr) {
    DeleteFiber(run->first_fiber);
  } else {
    SetEvent(run->first_allocated);
    WaitForSingleObject(run->fiber_deleted, INFINITE);
  }
  run->caches_after_deletion = live_caches();
  allocate_and_free_many();
  ConvertFiberToThread();
  return 0;
}

TEST(WindowsFibers, DeletingTheFiberThatMadeAThreadsCacheLeavesTheThreadItsCache) {
  const std::uint64_t caches_before = live_caches();
  FiberThread run;
  HANDLE thread = CreateThread(nullptr, 0, run_a_fiber_then_delete_it, &run, 0, nullptr);
  ASSERT_NE(thread, nullptr);
  WaitForSingleObject(thread, INFINITE);
  CloseHandle(thread);
  EXPECT_EQ(run.caches_after_deletion, caches_before + 1);  // the living thread's
  EXPECT_EQ(live_caches(), caches_before);                  // given back at its exit
}

TEST(WindowsFibers, AFiberDeletedOnAnotherThreadLeavesItsThreadTheCacheAndItsExitGivesItBack) {
  const std::uint64_t caches_before = live_caches();
  FiberThread run;
  run.first_allocated = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  run.fiber_deleted = CreateEventA(nullptr, TRUE, FALSE, nullptr);
  HANDLE thread = CreateThread(nullptr, 0, run_a_fiber_then_delete_it, &run, 0, nullptr);
  ASSERT_NE(thread, nullptr);
  WaitForSingleObject(run.first_allocated, INFINITE);
  DeleteFiber(run.first_fiber);  // its callback runs here, on this thread
  SetEvent(run.fiber_deleted);
  WaitForSingleObject(thread, INFINITE);
  CloseHandle(thread);
  CloseHandle(run.first_allocated);
  CloseHandle(run.fiber_deleted);
  EXPECT_EQ(run.caches_after_deletion, caches_before + 1);
  EXPECT_EQ(live_caches(), caches_before);  // at the thread's exit, with no decay step
}

}  // namespace
