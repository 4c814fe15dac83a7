// Large buffers that threads free go back to the system: four threads, alive at once, each
// allocate a 24 MiB buffer in turn, write all of it, and free it once all four have theirs.
// Once they are joined, the resident set is back within 16 MiB of what it was before them, the
// most that docs/debugging.md lets the debug build hold back (its quarantine); the release
// build, which holds nothing back, is held to the same bound. Built twice: against
// libpoolalloc.so here and against libpoolalloc-debug.so in tests/debug, at the default
// options both.
//
// A thread's request goes to its own glibc arena, so each of the three after the first lands
// in a heap of its own, where it stayed resident after its free when glibc's mmap threshold
// had been raised to its size (72 MiB of four freed buffers).
#include <stdlib.h>

#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

constexpr std::size_t kBufferBytes = 24 * kMiB;
constexpr int kThreads = 4;
// docs/debugging.md: the debug build holds back up to POOLALLOC_QUARANTINE (16 MiB) of freed
// blocks.
constexpr std::size_t kBound = 16 * kMiB;

TEST(FreedLargeBuffers, HeldBackNoMoreThanTheQuarantineOnceTheirThreadsAreJoined) {
  const std::size_t before = resident_bytes();
  std::mutex mutex;
  std::condition_variable changed;
  int allocated = 0;
  bool all_written = true;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return allocated == i; });  // in turn
      auto* buffer = static_cast<unsigned char*>(malloc(opaque(kBufferBytes)));
      if (buffer != nullptr) {
        std::memset(hide(buffer), i + 1, kBufferBytes);
        all_written = all_written && all_bytes_are(hide(buffer), kBufferBytes, i + 1);
      } else {
        all_written = false;
      }
      ++allocated;
      changed.notify_all();
      changed.wait(lock, [&] { return allocated == kThreads; });
      lock.unlock();
      free(buffer);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::size_t after = resident_bytes();
  std::printf("RSS %zu MiB before, %zu MiB once %d threads freed %zu MiB each\n", before / kMiB,
              after / kMiB, kThreads, kBufferBytes / kMiB);
  ASSERT_TRUE(all_written);
  EXPECT_LT(after, before + kBound);
}

}  // namespace
}  // namespace malloc_test
