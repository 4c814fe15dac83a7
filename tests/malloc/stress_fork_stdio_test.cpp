// fork() while other threads hold stdio locks and allocate inside them. glibc's fork runs the
// atfork prepare handlers, then takes the stdio list lock, then its own malloc locks. A thread
// that allocates while holding a FILE lock (getline growing its line buffer, or flockfile
// around mallocs) and a thread in fflush(NULL), which holds the list lock and waits for each
// FILE lock, must not deadlock the forking thread: the allocator must never make a thread wait
// for a lock it holds for a fork. Each scenario runs under a watchdog (fork_scenario.hpp).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "fork_scenario.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kWatchdogSeconds = 30;
constexpr long kForks = 2000;
constexpr double kForkSeconds = 10;

// A file of lines 1,000 .. 30,000 bytes long: getline reallocates its buffer through every
// size class up to 32 KiB while it holds the FILE lock.
FILE* file_of_growing_lines() {
  FILE* fp = tmpfile();
  if (fp == nullptr) return nullptr;
  for (int k = 1; k <= 30; ++k) {
    for (int i = 0; i < k * 1000; ++i) fputc('a' + i % 26, fp);
    fputc('\n', fp);
  }
  fflush(fp);
  return fp;
}

enum class Reader { kGetline, kFlockfileMalloc };

// The line buffers the reader hands to the flushing thread, which frees them: the reader only
// allocates and the flusher only frees, so the reader's thread cache refills (takes a lock)
// inside getline, and the flusher's flushes, instead of recycling blocks on their own.
std::atomic<char*> g_handoff{nullptr};

// Reads the file with getline (a fresh buffer each pass), or locks it with flockfile and
// allocates and frees three blocks of each of eight sizes of 20-32 KiB inside (more than a
// thread cache keeps of those classes: refills and flushes under the FILE lock).
void read_until(FILE* fp, Reader reader, const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    if (reader == Reader::kGetline) {
      rewind(fp);
      char* line = nullptr;
      size_t capacity = 0;
      while (getline(&line, &capacity, fp) > 0) {
      }
      free(g_handoff.exchange(line));
    } else {
      void* blocks[24];
      flockfile(fp);
      for (int i = 0; i < 24; ++i) {
        blocks[i] = malloc(20 * 1024 + static_cast<size_t>(i % 8) * 1536);
        if (blocks[i] != nullptr) memset(blocks[i], i, 64);
      }
      for (void* p : blocks) free(p);
      funlockfile(fp);
    }
  }
}

int stdio_scenario(Reader reader) {
  FILE* fp = file_of_growing_lines();
  if (fp == nullptr) return 10;
  std::atomic<bool> stop{false};
  std::thread reading([&] { read_until(fp, reader, stop); });
  std::thread flushing([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      free(g_handoff.exchange(nullptr));
      fflush(nullptr);
    }
  });
  const long forks = fork_loop(kForks, kForkSeconds, [] { _exit(0); });
  stop = true;
  reading.join();
  flushing.join();
  free(g_handoff.exchange(nullptr));
  fclose(fp);
  if (forks < 0) return 11;
  return forks > 0 ? 0 : 12;
}

TEST(ForkStdio, WhileAThreadGrowsAGetlineBufferAndAnotherFlushesAll) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, [] { return stdio_scenario(Reader::kGetline); }));
}

TEST(ForkStdio, WhileAThreadAllocatesUnderFlockfileAndAnotherFlushesAll) {
  EXPECT_TRUE(
      RunUnderWatchdog(kWatchdogSeconds, [] { return stdio_scenario(Reader::kFlockfileMalloc); }));
}

}  // namespace
}  // namespace malloc_test
