// fork() in a multithreaded program whose fork handlers, registered by a library initialised
// before the allocator (fork_handler_library.cpp), allocate: in the prepare handler, which runs
// after the allocator's, and in the child handler, which runs before the allocator's. Neither
// may deadlock, whatever the order of the handlers. Each scenario runs under a watchdog.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "fork_handler_library.hpp"
#include "fork_scenario.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kWatchdogSeconds = 30;
constexpr long kForks = 500;
constexpr double kForkSeconds = 10;

[[noreturn]] void child_allocates_and_exits() {
  for (size_t size : {16u, 3000u, 6000u, 20000u, 100000u}) {
    void* p = malloc(size);
    if (p == nullptr) _exit(20);
    memset(p, 1, size);
    free(p);
  }
  _exit(0);
}

// Runs fork_loop(count, seconds, in_child) while another thread allocates and frees (so that
// the allocator takes its locks for each fork); returns fork_loop's result.
long fork_while_another_thread_allocates(long count, void (*in_child)()) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    void* slots[32] = {};
    for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      void*& slot = slots[i % 32];
      free(slot);
      slot = malloc(16 + (i * 97) % 2000);
    }
    for (void* p : slots) free(p);
  });
  const long forks = fork_loop(count, kForkSeconds, in_child);
  stop = true;
  busy.join();
  return forks;
}

int handlers_scenario(bool in_prepare, bool in_child) {
  fork_handlers_allocate(in_prepare, in_child);
  const long forks = fork_while_another_thread_allocates(kForks, child_allocates_and_exits);
  if (forks <= 0) return 21;
#ifndef POOLALLOC_TEST_DEBUG_HEAP
  // The allocator's prepare handler ran before the library's: the library's first allocation
  // in the fork window did not come from the pools.
  if (in_prepare && fork_handlers_first_prepare_pooled() != 0) return 22;
#endif
  return 0;
}

TEST(ForkHandlers, LibraryHandlersAreRegisteredBeforeTheAllocators) {
  EXPECT_TRUE(fork_handlers_registered_first());
}

TEST(ForkHandlers, PrepareHandlerThatAllocatesRunsAfterTheAllocators) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, [] { return handlers_scenario(true, false); }));
}

TEST(ForkHandlers, ChildHandlerThatAllocatesRunsBeforeTheAllocators) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, [] { return handlers_scenario(false, true); }));
}

TEST(ForkHandlers, PrepareAndChildHandlersThatAllocate) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, [] { return handlers_scenario(true, true); }));
}

// Thousands of blocks allocated inside one fork: by the prepare handler (freed by the parent
// and child handlers) and by the child handler, while another thread allocates and frees.
// Nothing the allocator does while its locks are held for fork may have a fixed capacity.
constexpr int kManyBlocks = 20000;
void* g_many[kManyBlocks];
std::atomic<int> g_many_failures{0};

void allocate_many() {
  for (int i = 0; i < kManyBlocks; ++i) {
    g_many[i] = malloc(16 + static_cast<size_t>(i % 64) * 16);
    if (g_many[i] == nullptr) g_many_failures.fetch_add(1);
  }
}
void free_many() {
  for (void*& p : g_many) {
    free(p);
    p = nullptr;
  }
}
void child_allocates_many() {
  free_many();
  allocate_many();
  free_many();
}

int many_blocks_scenario() {
  fork_handlers_call(allocate_many, free_many, child_allocates_many);
  const long forks =
      fork_while_another_thread_allocates(20, [] { _exit(g_many_failures.load() == 0 ? 0 : 40); });
  fork_handlers_call(nullptr, nullptr, nullptr);
  if (forks <= 0) return 41;
  return g_many_failures.load() == 0 ? 0 : 42;
}

TEST(ForkHandlers, HandlersAllocateThousandsOfBlocksInOneFork) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, many_blocks_scenario));
}

}  // namespace
}  // namespace malloc_test
