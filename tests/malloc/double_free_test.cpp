// A block freed twice is reported and aborts, as glibc's tcache does ("free(): double free
// detected in tcache 2"), wherever the first free put it: this thread's cache, another
// thread's, the central lists or its span. Also through realloc, delete and sized delete, in a
// forked child and from an exiting thread's destructors, after the thread's cache is gone.
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <sched.h>

#include <atomic>
#include <cstdio>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

std::string hex_address(const void* p) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x0*%lx",
                static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  return hex;
}

// The one line the release library writes for a double free of a 64-byte block (class 3).
std::string double_free_of_64(const void* p) {
  return "^poolalloc: free\\(" + hex_address(p) +
         "\\): double free of the 64-byte block \\(size class 3\\)\n";
}

// "fast" forks, so the child frees the very address the regex names. Each scenario frees the
// block first in the child too, so a double free in a child after fork() is covered as well.
class DoubleFreeDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

// Releases p twice in the forked child, which must die with the report. (Both releases happen
// there: a block freed in the parent could be reused by the test framework before it forks.)
template <class Release>
void expect_second_release_aborts(void* p, Release release) {
  void* alias = hide(p);  // the compiler must not see the second release as a use after free
  EXPECT_DEATH(
      {
        release(p);
        release(alias);
      },
      double_free_of_64(p));
  release(p);  // the parent's copy of p is still live
}

void* free_twice_with_cancel_pending(void* p) {
  pthread_cancel(pthread_self());  // deferred: acted on at the next cancellation point
  free(p);
  free(hide(p));
  return nullptr;
}

// The report's write is a cancellation point: a thread with a cancellation pending must still
// write the whole report and abort, not be cancelled out of free() with the heap misused.
TEST_F(DoubleFreeDeathTest, AThreadWithACancellationPendingReportsAndAborts) {
  void* p = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        pthread_t thread;
        if (pthread_create(&thread, nullptr, free_twice_with_cancel_pending, p) == 0)
          pthread_join(thread, nullptr);
      },
      double_free_of_64(p));
  free(p);
}

TEST_F(DoubleFreeDeathTest, ImmediateDoubleFreeAborts) {
  void* p = malloc(opaque<size_t>(64));
  ASSERT_NE(poolalloc_owns(p), 0);
  expect_second_release_aborts(p, [](void* q) { free(q); });
}

TEST_F(DoubleFreeDeathTest, DoubleFreeWithAnotherFreeBetweenAborts) {
  void* p = malloc(opaque<size_t>(64));
  void* q = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        free(p);
        free(q);
        free(hide(p));
      },
      double_free_of_64(p));
  free(p);
  free(q);
}

// Without the check, the two next mallocs would both return the block.
TEST_F(DoubleFreeDeathTest, TheBlockIsNeverHandedOutTwice) {
  void* p = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        free(p);
        free(hide(p));
        void* a = malloc(opaque<size_t>(64));
        void* b = malloc(opaque<size_t>(64));
        if (a == b) std::fputs("the same block twice\n", stderr);
      },
      double_free_of_64(p));
  free(p);
}

// Enough frees of the class after p to push p's batch out of the thread's cache (a bin holds
// two batches of 512 64-byte blocks) into the central stack of batches.
TEST_F(DoubleFreeDeathTest, DoubleFreeAfterTheCacheFlushedTheBlockAborts) {
  void* p = malloc(opaque<size_t>(64));
  std::vector<void*> others(4096);
  for (void*& q : others) q = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        free(p);
        for (void* q : others) free(q);
        free(hide(p));
      },
      double_free_of_64(p));
  free(p);
  for (void* q : others) free(q);
}

// malloc_trim(0) empties this thread's cache and the central stacks into the spans; a
// neighbour kept live keeps p's span in use, so p waits in its span's free list.
TEST_F(DoubleFreeDeathTest, DoubleFreeOfABlockBackInItsSpanAborts) {
  std::vector<void*> neighbours(16);
  for (void*& q : neighbours) q = malloc(opaque<size_t>(64));
  void* p = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        free(p);
        malloc_trim(0);
        free(hide(p));
      },
      double_free_of_64(p));
  free(p);
  for (void* q : neighbours) free(q);
}

TEST_F(DoubleFreeDeathTest, DoubleFreeOfABlockFreedByAThreadThatExitedAborts) {
  void* p = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        std::thread([p] { free(p); }).join();
        free(hide(p));
      },
      double_free_of_64(p));
  free(p);
}

// The first free put the block in the cache of a thread that is still running.
TEST_F(DoubleFreeDeathTest, DoubleFreeOfABlockInAnotherThreadsCacheAborts) {
  void* p = malloc(opaque<size_t>(64));
  EXPECT_DEATH(
      {
        std::atomic<bool> freed{false};
        std::thread holder([p, &freed] {
          free(p);
          freed = true;
          for (;;) pause();  // keeps p in its cache until the process dies
        });
        while (!freed) sched_yield();
        free(hide(p));
        holder.detach();
      },
      double_free_of_64(p));
  free(p);
}

TEST_F(DoubleFreeDeathTest, ReallocOfAFreedBlockAborts) {
  void* p = malloc(opaque<size_t>(64));
  for (size_t size : {200, 10}) {
    EXPECT_DEATH(
        {
          free(p);
          hide(realloc(hide(p), opaque(size)));
        },
        "^poolalloc: realloc\\(" + hex_address(p) +
            "\\): the 64-byte block \\(size class 3\\) is free already\n");
  }
  free(p);
}

// Every class, not only 64 bytes (the smallest, 16 bytes, has just the two words).
TEST_F(DoubleFreeDeathTest, EveryAllocationAndDeallocationFunctionIsCovered) {
  const auto plain_free = [](void* p) { free(p); };
  expect_second_release_aborts(calloc(opaque<size_t>(4), opaque<size_t>(16)), plain_free);
  expect_second_release_aborts(memalign(opaque<size_t>(64), opaque<size_t>(64)), plain_free);
  expect_second_release_aborts(aligned_alloc(opaque<size_t>(32), opaque<size_t>(50)), plain_free);
  expect_second_release_aborts(realloc(nullptr, opaque<size_t>(64)), plain_free);
  void* p = nullptr;
  ASSERT_EQ(posix_memalign(&p, opaque<size_t>(64), opaque<size_t>(64)), 0);
  expect_second_release_aborts(p, plain_free);
  expect_second_release_aborts(operator new(opaque<size_t>(64)),
                               [](void* q) { operator delete(q); });
  expect_second_release_aborts(operator new[](opaque<size_t>(64)),
                               [](void* q) { operator delete[](q, size_t{64}); });
  expect_second_release_aborts(operator new (opaque<size_t>(64), std::align_val_t{64}),
                               [](void* q) {
                                 operator delete (q, size_t{64}, std::align_val_t{64});
                               });
  expect_second_release_aborts(operator new(opaque<size_t>(64), std::nothrow),
                               [](void* q) { operator delete(q, std::nothrow); });
}

TEST_F(DoubleFreeDeathTest, EverySizeClassIsCovered) {
  for (size_t n = 16; n <= 32768; n *= 2) {
    void* p = malloc(opaque(n));
    EXPECT_DEATH(
        {
          free(p);
          free(hide(p));
        },
        "^poolalloc: free\\(" + hex_address(p) + "\\): double free of the " + std::to_string(n) +
            "-byte block");
    free(p);
  }
}

// A thread's cache is flushed by its pthread key's destructor; destructors of keys created
// later run after it, when the thread has no cache any more and frees go to the central lists.
pthread_key_t g_late_key;
void double_free_at_exit(void* p) {
  free(p);
  free(hide(p));
}

TEST_F(DoubleFreeDeathTest, DoubleFreeInAnExitingThreadsDestructorAborts) {
  EXPECT_DEATH(
      {
        ASSERT_EQ(pthread_key_create(&g_late_key, double_free_at_exit), 0);
        void* p = malloc(opaque<size_t>(64));
        std::thread([p] { pthread_setspecific(g_late_key, p); }).join();
      },
      "^poolalloc: free\\(0x[0-9a-f]+\\): double free of the 64-byte block \\(size class 3\\)\n");
}

// The mark of a free block depends on its address: a program that copies a freed block's words
// into a live block (a use after free, but one that stays harmless) does not make that block
// look free.
TEST(DoubleFree, AFreedBlocksWordsCopiedIntoALiveBlockDoNotMarkItFree) {
  auto* p = static_cast<uintptr_t*>(malloc(opaque<size_t>(64)));
  auto* q = static_cast<uintptr_t*>(malloc(opaque<size_t>(64)));
  free(p);
  uintptr_t* freed = hide(p);
  q[0] = freed[0];
  q[1] = freed[1];
  free(q);
  void* again = malloc(opaque<size_t>(64));
  EXPECT_EQ(again, q);
  free(again);
}

// A live block whose second word holds anything else, its own address included, frees fine.
TEST(DoubleFree, LiveBlocksWithAnyContentFreeFine) {
  for (uintptr_t value : {uintptr_t{0}, ~uintptr_t{0}, uintptr_t{0x5bd1e9955bd1e995u}}) {
    auto* p = static_cast<uintptr_t*>(malloc(opaque<size_t>(16)));
    p[0] = value;
    p[1] = value != 0 ? value : reinterpret_cast<uintptr_t>(p);
    free(p);
  }
}

}  // namespace
// A free of a block that lies in its span's never-used range (the bump index has not reached
// it, so it carries no free mark) is reported by the free itself. Taken into the thread cache,
// the block would go to the next malloc of the class, and the bump index would later hand it
// out again, to a second owner. The block is the last whole block of the span of a fresh
// 80-byte block: a span of that class holds 1638 blocks, far more than this process has used.
TEST_F(DoubleFreeDeathTest, FreeOfANeverHandedOutBlockAborts) {
  void* p = malloc(opaque<size_t>(80));
  ASSERT_EQ(malloc_usable_size(p), 80u);
  constexpr std::uintptr_t kSpan = std::uintptr_t{128} << 10;
  const std::uintptr_t span = reinterpret_cast<std::uintptr_t>(p) & ~(kSpan - 1);
  void* never = reinterpret_cast<void*>(span + (kSpan / 80 - 1) * 80);
  ASSERT_NE(never, p);
  std::ostringstream expected;
  expected << "poolalloc: free\\(" << never
           << "\\): not a block that malloc handed out: the 80-byte block \\(size class [0-9]+\\) "
              "lies in its span's never-used range";
  EXPECT_DEATH(
      {
        free(never);
        void* first = malloc(opaque<size_t>(80));
        for (std::uintptr_t i = 0; i < 4 * kSpan / 80; ++i) {
          if (malloc(opaque<size_t>(80)) == first) std::fputs("handed out twice\n", stderr);
        }
        std::_Exit(0);
      },
      expected.str());
  free(p);
}

// realloc applies the same check: realloc of such a block would copy whatever its bytes hold
// and free it into this thread's cache, to the same two owners.
TEST_F(DoubleFreeDeathTest, ReallocOfANeverHandedOutBlockAborts) {
  void* p = malloc(opaque<size_t>(80));
  ASSERT_EQ(malloc_usable_size(p), 80u);
  constexpr std::uintptr_t kSpan = std::uintptr_t{128} << 10;
  const std::uintptr_t span = reinterpret_cast<std::uintptr_t>(p) & ~(kSpan - 1);
  void* never = reinterpret_cast<void*>(span + (kSpan / 80 - 1) * 80);
  std::ostringstream expected;
  expected << "poolalloc: realloc\\(" << never
           << "\\): not a block that malloc handed out: the 80-byte block \\(size class [0-9]+\\) "
              "lies in its span's never-used range";
  EXPECT_DEATH(hide(realloc(never, opaque<size_t>(200))), expected.str());
  free(p);
}

}  // namespace malloc_test
