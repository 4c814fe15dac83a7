#include "bootstrap.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include <atomic>

#include "central_lists.hpp"
#include "free_block_marks.hpp"
#include "options.hpp"
#include "span_carving.hpp"
#include "stats.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

enum State : int { kUninitialised, kInitialising, kReady, kUnavailable };
constinit std::atomic<int> g_state{kUninitialised};
constinit bool g_options_read = false;
constinit bool g_locked_for_fork = false;

// fork() takes every allocator lock first, so that the child finds none held by a thread that
// does not exist there. Registered once the allocator works, hence after the handlers of the
// libraries initialised before us: it runs last among the prepare handlers, which may malloc.
// A single-threaded process skips the locking, as glibc does, so that a fork from a signal
// handler that interrupted malloc does not deadlock on the lock it interrupted.
void prepare_fork() {
  if (__libc_single_threaded) return;
  lock_central_lists_for_fork();
  lock_span_carving_for_fork();
  lock_thread_caches_for_fork();
  g_locked_for_fork = true;
}

void release_after_fork(bool in_child) {
  if (!g_locked_for_fork && !in_child) return;
  g_locked_for_fork = false;
  unlock_thread_caches_after_fork(in_child);
  unlock_span_carving_after_fork(in_child);
  unlock_central_lists_after_fork(in_child);
}

void parent_after_fork() {
  release_after_fork(false);
}
void child_after_fork() {
  release_after_fork(true);
}

// Before the C runtime ran, `environ` may not be set: the options are then read from the
// library's constructor instead (the region size, needed at once, keeps its default).
__attribute__((constructor)) void on_load() {
  const bool ready = ensure_initialised();
  if (!g_options_read) {
    g_options_read = read_options();
    if (ready) g_pooled_limit = g_options.max_pooled;
  }
}

__attribute__((destructor)) void on_exit() {
  if (g_options.stats_fd >= 0) print_stats(g_options.stats_fd);
}

}  // namespace

bool ensure_initialised() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kReady) [[likely]]
    return true;
  int expected = kUninitialised;
  if (state == kUninitialised && g_state.compare_exchange_strong(expected, kInitialising)) {
    // Nothing here allocates, so no call can come back into malloc while we initialise.
    g_options_read = read_options();
    choose_free_block_keys();  // before the first block is handed out
    const bool ready = reserve_region(g_options.region_size);
    init_thread_caches();
    // Unavailable pools leave the limit at 0: every request goes to the system allocator.
    if (ready) g_pooled_limit = g_options.max_pooled;
    g_state.store(ready ? kReady : kUnavailable, std::memory_order_release);
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
    return ready;
  }
  while ((state = g_state.load(std::memory_order_acquire)) == kInitialising) sched_yield();
  return state == kReady;
}

}  // namespace poolalloc::internal
