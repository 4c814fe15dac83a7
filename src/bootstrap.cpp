#include "bootstrap.hpp"

#include <atomic>

#include "free_block_marks.hpp"
#include "large_blocks.hpp"
#include "options.hpp"
#include "os.hpp"
#include "platform.hpp"
#include "pool_region.hpp"
#include "stats.hpp"
#include "thread_cache.hpp"

#if POOLALLOC_LINUX
#include <pthread.h>
#include <sys/single_threaded.h>

#include "central_lists.hpp"
#include "decay_thread.hpp"
#include "heap_profile.hpp"
#include "span_carving.hpp"
#include "system_forwarding.hpp"
#include "tag_budgets.hpp"
#include "tag_csv.hpp"
#include "tag_registry.hpp"
#include "tagged_system_blocks.hpp"
#else
#include <cstdlib>
#endif

namespace poolalloc::internal {
namespace {

enum State : int { kUninitialised, kInitialising, kReady, kUnavailable };
constinit std::atomic<int> g_state{kUninitialised};
constinit bool g_options_read = false;

#if POOLALLOC_LINUX
constinit bool g_locked_for_fork = false;
constinit POOLALLOC_THREAD_WORD(bool) t_holds_locks_for_fork{false};

// The fork protocol. fork() must not leave an allocator lock held, in the child, by a thread
// that does not exist there, so the prepare handler takes every lock, in the lock order
// (lock.hpp), and marks each "held for fork". Its wait is bounded: holders call nothing but
// mmap/mprotect/madvise inside their critical sections and wait only for locks later in the
// order. From then until the parent or child handler, NO thread waits for an allocator lock:
// - a refill that cannot lock returns nothing and malloc forwards to the system allocator
//   (glibc's malloc, which fork() locks last, after every handler, and resets in the child);
// - a flush that cannot lock leaves the blocks in the thread's bin beyond its limit, or in a
//   lock-free list that the next holder of the lock drains; a thread whose cache cannot be
//   registered goes uncached for now; statistics read the frozen data as it is;
// - the record of a tagged block above the pools waits in a log that the parent or child
//   handler replays (tagged_system_blocks.cpp).
// Only what cannot fall back waits: poolalloc_tag_register and a thread's first
// poolalloc_tag_push, in any thread but the forking one (holds_locks_for_fork; tag_registry.cpp
// says why that wait ends).
// Why no waiting: a thread allocating inside a libc lock (getline reallocs its buffer under the
// FILE lock) would block on us while fork() waits for the stdio list lock that another thread
// (fflush(NULL)) holds while it waits for that FILE lock: a cycle through fork() itself.
// Why handler order no longer matters: prepare handlers run in reverse order of registration,
// child handlers in order, so other libraries' handlers may run while our locks are held for
// fork (before ours release them), and they may malloc and free: that now falls back instead
// of deadlocking, in the parent and in the child (where the forking thread is the only thread
// and every lock reads "held for fork" until our child handler resets it).
// A single-threaded process skips the locking, as glibc does, so that a fork from a signal
// handler that interrupted malloc does not deadlock on the lock it interrupted.
void prepare_fork() {
  decay_thread_prepare_fork();
  if (__libc_single_threaded) return;
  t_holds_locks_for_fork = true;
  lock_tag_registry_for_fork();
  lock_thread_caches_for_fork();
  lock_central_lists_for_fork();
  lock_span_carving_for_fork();
  lock_large_blocks_for_fork();
  lock_tagged_system_blocks_for_fork();
  lock_samples_for_fork();
  lock_tag_budgets_for_fork();
  g_locked_for_fork = true;
}

void release_after_fork(bool in_child) {
  if (!g_locked_for_fork && !in_child) return;
  g_locked_for_fork = false;
  unlock_thread_caches_after_fork(in_child);
  unlock_span_carving_after_fork(in_child);
  unlock_central_lists_after_fork(in_child);
  unlock_large_blocks_after_fork(in_child);
  unlock_tagged_system_blocks_after_fork(in_child);
  unlock_tag_registry_after_fork(in_child);
  unlock_samples_after_fork(in_child);
  unlock_tag_budgets_after_fork(in_child);
  t_holds_locks_for_fork = false;  // last: a signal handler meanwhile must not wait for itself
}

void parent_after_fork() {
  release_after_fork(false);
  decay_thread_after_fork(false);
}
void child_after_fork() {
  release_after_fork(true);
  decay_thread_after_fork(true);
}

__attribute__((destructor)) void on_exit() {
  stop_creating_decay_thread();
  print_stats_at_exit();
  write_tag_csv_at_exit();
  dump_heap_profile_at_exit();
}
#else
// Windows: no fork, and the table at exit is printed by a handler that start_up registers with
// the C runtime's atexit.
void on_exit() {
  print_stats_at_exit();
}
#endif

// At load, before the program's threads: the pools are set up before any thread can read
// g_pooled_limit on its fast path (the tests of the core, which link no exports.cpp and so no
// start_up(), rely on this too).
POOLALLOC_AT_LOAD(on_load) {
  ensure_initialised();
}

}  // namespace

bool holds_locks_for_fork() {
#if POOLALLOC_LINUX
  return t_holds_locks_for_fork;
#else
  return false;
#endif
}

void start_up(bool debug_build) {
  const bool ready = ensure_initialised();
  // Before the C runtime ran, `environ` may not be set: the options are then read here
  // instead (the region size, needed at once, keeps its default).
  if (!g_options_read) {
    g_options_read = read_options();
    if (ready) g_pooled_limit = g_options.max_pooled;
  }
#if POOLALLOC_LINUX
  // glibc's thresholds behind the pools (system_forwarding.cpp); where the pools are
  // unavailable glibc serves everything, and its own rule suits it.
  if (ready) take_over_system_thresholds();
  start_heap_profile();
  start_tag_csv();
#else
  std::atexit(on_exit);
#endif
  report_options(debug_build);
}

bool ensure_initialised() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kReady) [[likely]]
    return true;
  int expected = kUninitialised;
  if (state == kUninitialised && g_state.compare_exchange_strong(expected, kInitialising)) {
    // Nothing here allocates, so no call can come back into malloc while we initialise.
    g_options_read = read_options();
    choose_free_block_key();  // before the first block is handed out
    const bool ready = place_region(g_options.region_size);
    init_thread_caches();
#if POOLALLOC_LINUX
    note_startup_cpus();
#endif
    init_large_blocks();
    // Unavailable pools leave the limit at 0: every request goes to the system allocator.
    if (ready) g_pooled_limit = g_options.max_pooled;
    g_state.store(ready ? kReady : kUnavailable, std::memory_order_release);
#if POOLALLOC_LINUX
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
#endif
    return ready;
  }
  while ((state = g_state.load(std::memory_order_acquire)) == kInitialising) os_yield();
  return state == kReady;
}

}  // namespace poolalloc::internal
