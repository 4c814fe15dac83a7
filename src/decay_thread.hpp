// The decay thread: runs the decay steps (decay.hpp) in the background, so that memory goes back
// whatever the program does after a peak: traffic that never leaves the thread caches' fast
// paths (which never read a clock), one call a second, or no call at all.
//
// Started lazily: by the first slow path of malloc that finds the pools holding more than
// kDecayThreadStartBytes of spans; a program that stays smaller never gets it, and its slow
// paths run the steps as they always did. Not by a slow path of free: glibc frees threads' TLS
// blocks while it holds the lock of its stack cache, which pthread_create takes (a thread
// joining another deadlocked on itself). Then:
// - it runs a step every third of POOLALLOC_DECAY_MS while the steps find memory to give back,
//   and sleeps on a futex after a step that found none, for one period at most (frees that stay
//   within the threads' caches wake nobody, and an idle owner's cache must still go back);
// - every slow path of malloc and free, and every thread's exit, may have made memory that a
//   step could give back (blocks carved into a cache that then goes idle, blocks flushed past a
//   cache, a cache left behind): each notes it (a relaxed load while the note stands) and wakes
//   the thread if it sleeps (a futex wake only on the transition from sleeping to running);
// - while it exists, slow paths run no step themselves (they keep emptying their own cache when
//   the flush epoch moved);
// - where it cannot be created (EAGAIN, a seccomp filter), the slow paths run the steps, and a
//   new attempt is made after a back-off of 1, 2, 4 ... 64 periods' worth of steps.
// Not created once the process has begun to exit, nor between fork()'s prepare and parent or
// child handlers; a child of fork() has no decay thread and starts its own on demand.
// POOLALLOC_DECAY_THREAD=0, or POOLALLOC_DECAY_MS=0, keeps it from being created.
#pragma once

#include <atomic>
#include <cstddef>

#include "os.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {

// The pools' spans, in bytes, past which the first slow path of malloc starts the thread: 8 MiB
// beyond a span for every size class, so that a small program that touched every class (9 MiB
// of spans, little of them resident) gets no thread.
inline constexpr std::size_t kDecayThreadStartBytes =
    (std::size_t{8} << 20) + (std::size_t{kClassCount} << kSpanShift);

enum DecayThreadState : int { kNotStarted, kStarting, kRunning, kSleeping, kFailed };
inline constinit std::atomic<int> g_decay_thread_state{kNotStarted};
// Set by the slow paths since the thread last looked: a step may find memory to give back. The
// thread reads and clears it before it sleeps, so that no note is lost (decay_thread.cpp).
inline constinit std::atomic<bool> g_decay_noted{false};

void start_decay_thread();
void wake_decay_thread();

// A slow path or a thread's exit may have made memory that a step could give back: notes it, and
// wakes the thread if it sleeps. The store and the load are sequentially consistent: with the
// thread's own two (it moves to kSleeping, then reads the note) one of the two sides sees the
// other's.
inline void note_decay_work() {
  if (!g_decay_noted.load(std::memory_order_relaxed)) g_decay_noted.store(true);
  if (g_decay_thread_state.load() == kSleeping) [[unlikely]]
    wake_decay_thread();
}

// Malloc's slow path, holding no allocator lock (creating a thread allocates): starts the thread
// when the pools have grown enough, else notes the work.
inline void on_malloc_slow_path() {
  if (g_decay_thread_state.load(std::memory_order_relaxed) == kNotStarted) [[unlikely]]
    start_decay_thread();
  else
    note_decay_work();
}

// Whether the decay thread runs the steps (so that slow paths do not).
inline bool decay_thread_runs() {
  const int state = g_decay_thread_state.load(std::memory_order_relaxed);
  return state == kRunning || state == kSleeping;
}

// Set by a class that must fault in a new span while the central stacks hold many blocks
// (central_lists.cpp), cleared by the thread as it empties the stacks.
inline constinit std::atomic<int> g_stack_drain_requested{0};

// The thread empties every central stack into the spans now, between its steps, so that the
// spans that only stacked blocks kept busy go back to span carving for any class. One futex call
// for the first request; none for the next ones until the thread has done it.
inline void request_stack_drain() {
  if (!decay_thread_runs() || g_stack_drain_requested.load(std::memory_order_relaxed) != 0) return;
  g_stack_drain_requested.store(1, std::memory_order_relaxed);
  if (g_decay_thread_state.load() == kSleeping)
    wake_decay_thread();  // it then runs a whole step, which empties the stacks
  else
    os_futex_wake(g_stack_drain_requested, 1);
}

// A slow path ran a step: counts down the back-off after a failed creation.
void decay_thread_count_step();

// The library's destructor: no thread is created from now on.
void stop_creating_decay_thread();

void decay_thread_prepare_fork();
void decay_thread_after_fork(bool in_child);

}  // namespace poolalloc::internal
