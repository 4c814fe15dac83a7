// At the default options (POOLALLOC_DECAY_MS=1000), the resident set comes back down to the
// live set plus a small bound within two decay periods of a peak: in a single-threaded program
// whose traffic never leaves the thread cache's fast path, that makes one call a second, or
// frees only (its own calls run the steps, and no thread of ours ever exists), and in a program
// that runs threads of its own whatever it does, no call at all included (the decay thread,
// src/decay_thread.hpp, runs the steps there); a child of fork gets its memory back too.
//
// Each test is a process of its own (gtest_discover_tests), so the thread's state is each
// test's own.
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "rss_workloads.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBurst = size_t{128} << 20;
// Two decay periods at the default POOLALLOC_DECAY_MS.
constexpr auto kTwoPeriods = std::chrono::milliseconds(2000);
// docs/tuning.md's small bound.
constexpr size_t kBound = 8 * kMiB;

void pause_ms(long ms) {
  const timespec pause{ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&pause, nullptr);
}

// Runs the burst, then `after_peak` until two periods have passed since the burst was freed;
// returns the resident set then, which the caller compares with `before`.
template <class AfterPeak>
void expect_rss_back_within_two_periods(const char* what, AfterPeak after_peak) {
  const size_t before = resident_bytes();
  ASSERT_TRUE(burst_freed_in_random_order(kBurst, poolalloc_test::test_seed(4)));
  const auto freed_at = Clock::now();
  const size_t freed = resident_bytes();
  after_peak(freed_at + kTwoPeriods);
  const size_t after = resident_bytes();
  std::printf(
      "RSS %zu MiB before, %zu MiB once %zu MiB were freed, %zu MiB two periods later (%s)\n",
      before / kMiB, freed / kMiB, kBurst / kMiB, after / kMiB, what);
  EXPECT_LT(after, before + kBound);
}

// 1000 blocks of 64 to 127 bytes allocated, written and freed every 10 ms: about 96 KiB live at
// most, all of it served by the thread cache's fast path once its bins have grown (the same
// sizes each time, so that no bin ever runs short or over).
TEST(RssAfterPeak, FallsWithinTwoPeriodsUnderFastPathOnlyTraffic) {
  expect_rss_back_within_two_periods("fast-path traffic", [](Clock::time_point until) {
    void* blocks[1000];
    while (Clock::now() < until) {
      for (size_t i = 0; i < 1000; ++i) {
        blocks[i] = malloc(opaque(size_t{64} + i % 64));
        if (blocks[i] != nullptr) static_cast<uintptr_t*>(blocks[i])[0] = i;
      }
      for (void* block : blocks) free(block);
      pause_ms(10);
    }
  });
}

// One allocator call a second, until `until`: a malloc of `size` bytes, and a second later its
// free.
void one_call_a_second(size_t size, Clock::time_point until) {
  void* block = nullptr;
  while (Clock::now() < until) {
    if (block == nullptr) {
      block = malloc(opaque(size));
    } else {
      free(block);
      block = nullptr;
    }
    std::this_thread::sleep_until(std::min(until, Clock::now() + std::chrono::seconds(1)));
  }
  free(block);
}

TEST(RssAfterPeak, FallsWithinTwoPeriodsUnderOneCallASecond) {
  expect_rss_back_within_two_periods("one call a second",
                                     [](Clock::time_point until) { one_call_a_second(64, until); });
}

// The same with a block above 32 KiB (an I/O buffer): such a call is one call a second as much
// as a small one.
TEST(RssAfterPeak, FallsWithinTwoPeriodsUnderOneCallASecondOfALargeBlock) {
  expect_rss_back_within_two_periods(
      "one large call a second", [](Clock::time_point until) { one_call_a_second(100000, until); });
}

// After the peak the program only frees: 1000 blocks it kept, one every 2 ms.
TEST(RssAfterPeak, FallsWithinTwoPeriodsUnderFreesOnly) {
  void* kept[1000];
  for (void*& block : kept) block = malloc(opaque(size_t{64}));
  expect_rss_back_within_two_periods("frees only", [&](Clock::time_point until) {
    for (void* block : kept) {
      free(block);
      pause_ms(2);
    }
    std::this_thread::sleep_until(until);
  });
}

TEST(RssAfterPeak, FallsWithinTwoPeriodsWithNoCallAtAllInAProgramThatRunsThreads) {
  const ThreadOfItsOwn companion;
  ASSERT_TRUE(decay_thread_started());
  expect_rss_back_within_two_periods(
      "no call", [](Clock::time_point until) { std::this_thread::sleep_until(until); });
}

// A program that runs a thread of its own which never allocates (a watchdog, a thread that waits
// for signals or on a descriptor) runs threads of its own all the same: no call at all after
// the peak, and its memory comes back within two periods.
TEST(RssAfterPeak, FallsWithinTwoPeriodsWithNoCallAtAllBesideAThreadThatNeverAllocates) {
  int wake[2];
  ASSERT_EQ(pipe(wake), 0);
  pthread_t waiter;
  ASSERT_EQ(pthread_create(
                &waiter, nullptr,
                [](void* fd) -> void* {
                  char byte;
                  while (read(*static_cast<int*>(fd), &byte, 1) < 0) {
                  }
                  return nullptr;
                },
                &wake[0]),
            0);
  expect_rss_back_within_two_periods(
      "no call, beside a thread that never allocates",
      [](Clock::time_point until) { std::this_thread::sleep_until(until); });
  ASSERT_EQ(write(wake[1], "x", 1), 1);
  pthread_join(waiter, nullptr);
  close(wake[0]);
  close(wake[1]);
}

// Blocks above 32 KiB freed while the decay thread runs wait in the large-block cache: its steps
// give them back to glibc, which hands the pages back, so RSS falls back within two periods as
// well. 200 MiB of 256 KiB blocks, freed; no call after.
TEST(RssAfterPeak, FallsWithinTwoPeriodsAfterLargeBlocksWithNoCallAtAll) {
  const ThreadOfItsOwn companion;
  ASSERT_TRUE(decay_thread_started());
  constexpr size_t kBlock = size_t{256} << 10, kBlocks = (size_t{200} << 20) / kBlock;
  const size_t before = resident_bytes();
  PointerArray blocks(kBlocks);
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks[i] = malloc(opaque(kBlock));
    ASSERT_NE(blocks[i], nullptr);
    std::memset(blocks[i], 1, kBlock);
  }
  for (size_t i = 0; i < kBlocks; ++i) free(blocks[i]);
  const auto freed_at = Clock::now();
  const size_t freed = resident_bytes();
  std::this_thread::sleep_until(freed_at + kTwoPeriods);
  const size_t after = resident_bytes();
  std::printf(
      "RSS %zu MiB before, %zu MiB once 200 MiB of 256 KiB blocks were freed, %zu MiB two "
      "periods later\n",
      before / kMiB, freed / kMiB, after / kMiB);
  EXPECT_LT(after, before + kBound);
}

// A program with its main thread alone never gets the decay thread, however many slow paths it
// takes and however large its peak: one that keeps a block of every size class (a span each,
// 9 MiB of spans in all), churns, and frees a burst of 128 MiB.
TEST(RssAfterPeak, SingleThreadedProgramNeverStartsTheDecayThread) {
  PointerArray one_per_class(32768 / 16);
  size_t classes = 0;
  for (size_t size = 16, last = 0; size <= 32768; size += 16) {
    void* block = malloc(opaque(size));
    if (malloc_usable_size(block) == last) {
      free(block);
      continue;
    }
    last = malloc_usable_size(block);
    one_per_class[classes++] = block;
  }
  std::mt19937_64 rng(poolalloc_test::test_seed(6));
  PointerArray blocks(4096);
  for (int round = 0; round < 200; ++round) {
    for (size_t i = 0; i < 4096; ++i) blocks[i] = malloc(opaque(mixed_size(rng) % 1024 + 1));
    for (size_t i = 4096; i > 1; --i) std::swap(blocks[i - 1], blocks[rng() % i]);
    for (size_t i = 0; i < 4096; ++i) free(blocks[i]);
  }
  ASSERT_TRUE(burst_freed_in_random_order(kBurst, poolalloc_test::test_seed(13)));
  EXPECT_FALSE(decay_thread_started(2000));  // two periods of slow paths
  for (size_t i = 0; i < classes; ++i) free(one_per_class[i]);
}

// The decay thread sleeps once its steps find nothing; then a pool of workers that each take
// blocks of the larger classes through their caches' slow paths, free them into their caches
// (no free passes a cache) and wait, must wake it: their caches go back within two periods.
TEST(RssAfterPeak, IdleWorkersCachesGoBackAfterTheThreadSlept) {
  constexpr int kWorkers = 64;
  ASSERT_TRUE(burst_freed_in_random_order(size_t{32} << 20, poolalloc_test::test_seed(9)));
  std::this_thread::sleep_for(kTwoPeriods);  // the thread gave the burst back and sleeps
  const size_t before = resident_bytes();
  std::mutex mutex;
  std::condition_variable done;
  int idle = 0;
  bool finish = false;
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      void* blocks[2];
      for (size_t size = 1024; size <= 32768; size += size / 4) {
        for (void*& block : blocks) {
          block = malloc(opaque(size));
          if (block != nullptr) std::memset(block, 1, size);
        }
        for (void* block : blocks) free(block);
      }
      std::unique_lock<std::mutex> lock(mutex);
      ++idle;
      done.notify_all();
      done.wait(lock, [&] { return finish; });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return idle == kWorkers; });
  }
  const size_t busy = resident_bytes();
  std::this_thread::sleep_for(kTwoPeriods);
  const size_t after = resident_bytes();
  {
    std::lock_guard<std::mutex> lock(mutex);
    finish = true;
  }
  done.notify_all();
  for (std::thread& worker : workers) worker.join();
  std::printf("RSS %zu MiB before the workers, %zu MiB once idle, %zu MiB two periods later\n",
              before / kMiB, busy / kMiB, after / kMiB);
  // The bound, and each worker's cache (68 KiB at most) and stack (the test's own cost).
  EXPECT_LT(after, before + kBound + kWorkers * 2 * 68 * 1024);
}

// The decay thread sleeps once its steps find nothing; then workers free what they hold into
// their own caches (the bins have room: no free leaves the fast path, nothing wakes the thread)
// and wait. A sleeping thread still steps once a period: their caches go back within two.
TEST(RssAfterPeak, FastPathFreesIntoIdleCachesGoBackWhileTheThreadSleeps) {
  constexpr int kWorkers = 64;
  ASSERT_TRUE(burst_freed_in_random_order(size_t{32} << 20, poolalloc_test::test_seed(10)));
  std::mutex mutex;
  std::condition_variable changed;
  int holding = 0, idle = 0;
  size_t held = 0;  // bytes the workers hold (usable sizes)
  bool free_now = false, finish = false;
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      // About 16 KiB of each class from 256 B to 32 KiB, touched; the bins grow with the
      // refills to hold them all again.
      std::vector<void*> blocks;
      blocks.reserve(1024);
      for (int round = 0; round < 2; ++round) {
        for (size_t size = 256; size <= 32768; size += size / 8) {
          for (size_t n = 0; n < std::max<size_t>(1, 16384 / size); ++n) {
            void* block = malloc(opaque(size));
            if (block != nullptr) std::memset(block, 1, size);
            blocks.push_back(block);
          }
        }
        if (round == 0) {
          for (void* block : blocks) free(block);
          blocks.clear();
        }
      }
      size_t bytes = 0;
      for (void* block : blocks) bytes += malloc_usable_size(block);
      std::unique_lock<std::mutex> lock(mutex);
      held += bytes;
      ++holding;
      changed.notify_all();
      changed.wait(lock, [&] { return free_now; });
      lock.unlock();
      for (void* block : blocks) free(block);
      lock.lock();
      ++idle;
      changed.notify_all();
      changed.wait(lock, [&] { return finish; });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return holding == kWorkers; });
  }
  std::this_thread::sleep_for(kTwoPeriods);  // nothing to give back: the thread sleeps
  const size_t before = resident_bytes();
  {
    std::unique_lock<std::mutex> lock(mutex);
    free_now = true;
    changed.notify_all();
    changed.wait(lock, [&] { return idle == kWorkers; });
  }
  std::this_thread::sleep_for(kTwoPeriods);
  const size_t after = resident_bytes();
  {
    std::lock_guard<std::mutex> lock(mutex);
    finish = true;
  }
  changed.notify_all();
  for (std::thread& worker : workers) worker.join();
  std::printf(
      "RSS %zu MiB while the workers held %zu MiB, %zu MiB two periods after they freed "
      "them\n",
      before / kMiB, held / kMiB, after / kMiB);
  // The live set, the bound, and each worker's cache (68 KiB at most).
  EXPECT_LT(after, before - held + kBound + kWorkers * 68 * 1024);
}

// The decay thread does not survive fork(): a child of a parent that has it has the thread that
// forked alone, never gets one, and its own calls bring its memory back within two periods (one
// call a second here).
TEST(RssAfterPeak, ChildOfForkAfterTheThreadStartedGetsItsMemoryBack) {
  const ThreadOfItsOwn companion;
  ASSERT_TRUE(decay_thread_started()) << "the parent did not start the decay thread";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const size_t before = resident_bytes();
    if (!burst_freed_in_random_order(kBurst, poolalloc_test::test_seed(8))) _exit(3);
    const auto freed_at = Clock::now();
    const size_t freed = resident_bytes();
    for (int second = 0; second < 2; ++second) {
      free(malloc(opaque(size_t{64})));
      std::this_thread::sleep_until(freed_at + std::chrono::seconds(second + 1));
    }
    const bool had_thread = decay_thread_exists();
    const size_t after = resident_bytes();
    std::printf("child: RSS %zu MiB before, %zu MiB once freed, %zu MiB two periods later\n",
                before / kMiB, freed / kMiB, after / kMiB);
    std::fflush(stdout);
    _exit(had_thread ? 2 : after < before + kBound ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "the child had a decay thread";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's memory did not come back";
}

}  // namespace
}  // namespace malloc_test
