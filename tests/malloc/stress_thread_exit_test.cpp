// Allocation during thread exit (interposer checklist G6): thread_local destructors run first,
// then pthread key destructors (the allocator's own thread-exit hook among them), then glibc
// frees its per-thread state. malloc and free must keep working in all of these, blocks made
// there must stay valid after the thread is gone, and nothing may leak per thread.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

// Blocks allocated by exiting threads, checked and freed by the main thread. A fixed array:
// recording a block must not allocate.
class Survivors {
 public:
  void keep(void* p, size_t size, uintptr_t seed) {
    std::lock_guard lock(mutex_);
    if (count_ < kCapacity)
      entries_[count_++] = {p, size, seed};
    else
      free(p);
  }
  // Checks and frees every kept block; returns how many were damaged.
  int check_and_free_all() {
    std::lock_guard lock(mutex_);
    int damaged = 0;
    for (size_t i = 0; i < count_; ++i) {
      if (!matches(entries_[i].p, entries_[i].size, entries_[i].seed)) ++damaged;
      free(entries_[i].p);
    }
    count_ = 0;
    return damaged;
  }
  size_t count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  static constexpr size_t kCapacity = 4096;
  struct Entry {
    void* p;
    size_t size;
    uintptr_t seed;
  };
  std::mutex mutex_;
  Entry entries_[kCapacity] = {};
  size_t count_ = 0;
};

Survivors g_survivors;
std::atomic<int> g_damaged{0};
std::atomic<int> g_failed_allocations{0};
std::atomic<uintptr_t> g_seed{1};

// Allocates and frees across classes and the system path, and keeps one block.
void allocate_at_exit() {
  const uintptr_t seed = g_seed.fetch_add(1);
  for (size_t size : {16u, 48u, 200u, 1000u, 4000u, 20000u, 40000u}) {
    void* p = malloc(size);
    if (p == nullptr) {
      g_failed_allocations.fetch_add(1);
      continue;
    }
    fill(p, size, seed);
    if (!matches(p, size, seed)) g_damaged.fetch_add(1);
    free(p);
  }
  void* kept = malloc(96);
  if (kept == nullptr) {
    g_failed_allocations.fetch_add(1);
    return;
  }
  fill(kept, 96, seed);
  g_survivors.keep(kept, 96, seed);
}

// A key created after the allocator initialised: its destructor runs after the allocator's
// own. It re-arms itself once, so it also runs in a later destructor round, after every other
// key destructor has run at least once.
pthread_key_t g_key;
void key_destructor(void* value) {
  allocate_at_exit();
  if (reinterpret_cast<uintptr_t>(value) == 1) {
    pthread_setspecific(g_key, reinterpret_cast<void*>(uintptr_t{2}));
  }
}
std::once_flag g_key_once;
void make_key() {
  free(malloc(1));  // make sure the allocator's key exists before ours
  ASSERT_EQ(pthread_key_create(&g_key, key_destructor), 0);
}

struct AllocatesInDestructor {
  AllocatesInDestructor() { touched = malloc(32); }
  ~AllocatesInDestructor() {
    free(touched);
    allocate_at_exit();
  }
  void* touched;
};

void* thread_with_exit_allocations(void*) {
  thread_local AllocatesInDestructor object;
  free(malloc(64));  // the thread's cache exists before it exits
  pthread_setspecific(g_key, reinterpret_cast<void*>(uintptr_t{1}));
  return object.touched;
}

void* thread_with_thread_local_only(void*) {
  thread_local AllocatesInDestructor object;
  return object.touched;
}

void run_threads(int count, void* (*body)(void*)) {
  constexpr int kWave = 8;
  for (int done = 0; done < count; done += kWave) {
    pthread_t threads[kWave];
    for (pthread_t& t : threads) ASSERT_EQ(pthread_create(&t, nullptr, body, nullptr), 0);
    for (pthread_t t : threads) ASSERT_EQ(pthread_join(t, nullptr), 0);
  }
}

class ThreadExit : public testing::Test {
 protected:
  void SetUp() override {
    std::call_once(g_key_once, make_key);
    g_damaged = 0;
    g_failed_allocations = 0;
  }
};

// The thread_local case, with no dlopen involved: the destructor registered through
// __cxa_thread_atexit allocates and frees.
TEST_F(ThreadExit, ThreadLocalDestructorAllocates) {
  ASSERT_NO_FATAL_FAILURE(run_threads(8, thread_with_thread_local_only));
  EXPECT_EQ(g_failed_allocations.load(), 0);
  EXPECT_EQ(g_survivors.count(), 8u);
  EXPECT_EQ(g_survivors.check_and_free_all(), 0);
  EXPECT_EQ(g_damaged.load(), 0);
}

TEST_F(ThreadExit, KeyDestructorsAllocateAfterTheAllocatorsHook) {
  ASSERT_NO_FATAL_FAILURE(run_threads(8, thread_with_exit_allocations));
  EXPECT_EQ(g_failed_allocations.load(), 0);
  // One block from the thread_local destructor, two from the key destructor's two rounds.
  EXPECT_EQ(g_survivors.count(), 8u * 3);
  EXPECT_EQ(g_survivors.check_and_free_all(), 0);
  EXPECT_EQ(g_damaged.load(), 0);
}

// Allocating after the thread-exit hook must not leave a fresh cache behind for every thread.
TEST_F(ThreadExit, ExitAllocationsDoNotLeakPerThread) {
  ASSERT_NO_FATAL_FAILURE(run_threads(64, thread_with_exit_allocations));
  EXPECT_EQ(g_survivors.check_and_free_all(), 0);
  poolalloc_stats before{};
  poolalloc_get_stats(&before);
  const size_t rss_before = resident_bytes();
  ASSERT_NO_FATAL_FAILURE(run_threads(3000, thread_with_exit_allocations));
  EXPECT_EQ(g_survivors.check_and_free_all(), 0);
  const size_t rss_after = resident_bytes();
  poolalloc_stats after{};
  poolalloc_get_stats(&after);
  EXPECT_EQ(g_failed_allocations.load(), 0);
  EXPECT_EQ(g_damaged.load(), 0);
  EXPECT_LT(rss_after, rss_before + 32 * kMiB)
      << "RSS grew from " << rss_before / kMiB << " to " << rss_after / kMiB << " MiB";
  EXPECT_LE(after.thread_caches, before.thread_caches + 16);
}

}  // namespace
}  // namespace malloc_test
