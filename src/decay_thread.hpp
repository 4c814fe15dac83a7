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
//   and sleeps on a futex, without timeout, after a step that found none; the next slow path of
//   free wakes it (one relaxed load per slow path of malloc and free; a futex wake only on the
//   transition from sleeping to running);
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

namespace poolalloc::internal {

// The pools' spans, in bytes, past which the first slow path of malloc starts the thread.
inline constexpr std::size_t kDecayThreadStartBytes = std::size_t{8} << 20;

enum DecayThreadState : int { kNotStarted, kStarting, kRunning, kSleeping, kFailed };
inline constinit std::atomic<int> g_decay_thread_state{kNotStarted};

void start_decay_thread();
void wake_decay_thread();

// Malloc's slow path, holding no allocator lock (creating a thread allocates): starts the thread
// when the pools have grown enough.
inline void on_malloc_slow_path() {
  if (g_decay_thread_state.load(std::memory_order_relaxed) == kNotStarted) [[unlikely]]
    start_decay_thread();
}

// Free's slow path: memory came back past a cache; wakes the thread if it sleeps.
inline void on_free_slow_path() {
  if (g_decay_thread_state.load(std::memory_order_relaxed) == kSleeping) [[unlikely]]
    wake_decay_thread();
}

// Whether the decay thread runs the steps (so that slow paths do not).
inline bool decay_thread_runs() {
  const int state = g_decay_thread_state.load(std::memory_order_relaxed);
  return state == kRunning || state == kSleeping;
}

// A slow path ran a step: counts down the back-off after a failed creation.
void decay_thread_count_step();

// The library's destructor: no thread is created from now on.
void stop_creating_decay_thread();

void decay_thread_prepare_fork();
void decay_thread_after_fork(bool in_child);

}  // namespace poolalloc::internal
