// What the layers below decay (thread caches, central lists, span carving, large blocks) ask of
// it: a note that a step may find memory to give back, a wake of the decay thread, a request to
// empty the central stacks or the thread caches, and the look at the clock that runs a step when
// one is due. Decay itself (decay.hpp, decay_thread.hpp) sits above them and reads their state;
// this file lets them call up without including it, so that the files still read top to bottom
// as the layers do.
#pragma once

#include <atomic>
#include <cstdint>

#include "os.hpp"

namespace poolalloc::internal {

// The decay thread's state (decay_thread.cpp). kExited: it left, the program having no thread of
// its own besides the main one; its kernel thread may still be finishing (decay_thread.cpp
// waits for it to be gone before it counts the program's threads again).
enum DecayThreadState : int { kNotStarted, kStarting, kRunning, kSleeping, kFailed, kExited };
inline constinit std::atomic<int> g_decay_thread_state{kNotStarted};
// Set by the slow paths since the thread last looked: a step may find memory to give back. The
// thread reads and clears it before it sleeps, so that no note is lost (decay_thread.cpp).
inline constinit std::atomic<bool> g_decay_noted{false};

// Whether the decay thread runs the steps (so that the program's own calls do not).
inline bool decay_runs_in_background() {
  const int state = g_decay_thread_state.load(std::memory_order_relaxed);
  return state == kRunning || state == kSleeping;
}

// Wakes the decay thread if it sleeps: one futex call, on the move from sleeping to running.
inline void wake_decay_thread() {
  int state = kSleeping;
  if (g_decay_thread_state.compare_exchange_strong(state, kRunning, std::memory_order_release,
                                                   std::memory_order_relaxed))
    os_futex_wake(g_decay_thread_state, 1);
}

// A slow path or a thread's exit may have made memory that a step could give back: notes it, and
// wakes the thread if it sleeps. The store and the load are sequentially consistent: with the
// thread's own two (it moves to kSleeping, then reads the note) one of the two sides sees the
// other's.
inline void note_decay_work() {
  if (!g_decay_noted.load(std::memory_order_relaxed)) g_decay_noted.store(true);
  if (g_decay_thread_state.load() == kSleeping) [[unlikely]]
    wake_decay_thread();
}

// Set by a class that must fault in a new span while the central stacks hold many blocks
// (central_lists.cpp), cleared by the thread as it empties the stacks.
inline constinit std::atomic<int> g_stack_drain_requested{0};

// The thread empties every central stack into the spans now, between its steps, so that the
// spans that only stacked blocks kept busy go back to span carving for any class. One futex call
// for the first request; none for the next ones until the thread has done it. Without the thread
// the program's next slow path does it (serve_stack_drain_request): a phase of a single-threaded
// program is often shorter than a step interval (python's dicts of one size freed, then tuples of
// others built: 12 MiB more faulted in while the first phase's stacked blocks waited a step).
inline void request_stack_drain() {
  if (g_stack_drain_requested.load(std::memory_order_relaxed) != 0) return;
  g_stack_drain_requested.store(1, std::memory_order_relaxed);
  if (!decay_runs_in_background()) return;
  if (g_decay_thread_state.load() == kSleeping)
    wake_decay_thread();  // it then runs a whole step, which empties the stacks
  else
    os_futex_wake(g_stack_drain_requested, 1);
}

// If a class asked for it, empties the central stacks, at most `most_blocks` of their blocks, and
// has the threads' bins follow (decay.cpp). The decay thread empties them whole; a slow path
// a call's part, as of a step, and the class that asks again at its next new span gets the next.
void empty_requested_stacks(std::uint32_t most_blocks);

// A call's part of a step: the central stacks' blocks that one call of the program moves into
// their spans (decay.cpp).
inline constexpr std::uint32_t kStackedBlocksPerCall = 1024;

// A slow path's look at the requests that the decay thread serves where it runs: a relaxed load.
inline void serve_stack_drain_request() {
  if (g_stack_drain_requested.load(std::memory_order_relaxed) != 0 && !decay_runs_in_background())
      [[unlikely]]
    empty_requested_stacks(kStackedBlocksPerCall);
}

// A thread cache whose flush epoch differs from this one empties itself into the spans at its
// next slow path. malloc_trim moves it too, and so does every decay step: a cache whose epoch
// is behind at a step ran no slow path since the previous one (it is idle).
inline constinit std::atomic<std::uint32_t> g_flush_epoch{0};

// Moves the flush epoch on: every thread cache empties itself at its next slow path.
inline void request_cache_flush() {
  g_flush_epoch.fetch_add(1, std::memory_order_relaxed);
}

// How many slow-path entries of one thread pass between two looks at the clock.
inline constexpr std::uint32_t kSlowPathsPerClockCheck = 16;

// A thread's frees are a mass free when they have given the central lists kUnsettledBytes more
// than the refills took back, its own and, since its previous look at the clock, other threads',
// since the last step, for kMassFreeMs or more: a burst of frees that leaves memory to give back,
// not the free half of a cycle that allocates it again at once (a sweep of 1,000 blocks of 4 KiB),
// nor a consumer's frees of what a producer thread allocates again. What a step gave back counts
// too (decay.hpp).
inline constexpr std::int64_t kUnsettledBytes = std::int64_t{1} << 20;
inline constexpr std::uint64_t kMassFreeMs = 8;  // two ticks of the coarse clock

// What a thread's looks at the clock carry from one to the next: the bytes its frees gave the
// central lists less those its refills took back and the steps gave back to the OS (never below
// 0: what a burst of frees gives back counts from the lowest point before it; 0 once a step finds
// little to give back while the thread's frees have stopped), that figure at the last step it
// saw and that step, when it passed kUnsettledBytes (0 while below), and whether that makes a
// mass free.
// `net_at_look`: g_central_net_bytes at the thread's previous look, and `freed_at_look` its own
// figure then: what the process's figure grew less than the thread's since, other threads'
// refills took back.
// `quiet_step`: the look ran a step two step intervals or more after the previous one was due.
// The program went quiet (one call a second, say) and may make no call before the next step
// would be due, so the thread empties its whole cache into the spans and gives back the retained
// spans, those it emptied included, where the decay thread would have taken them a step later.
struct ClockLook {
  std::int64_t freed_bytes = 0;
  std::int64_t freed_at_step = 0;
  std::uint64_t freed_past_unsettled_ms = 0;
  std::int64_t net_at_look = 0;
  std::int64_t freed_at_look = 0;
  std::uint32_t steps_seen = 0;
  bool mass_free = false;
  bool quiet_step = false;
};

// The bytes that the flushes of every thread gave the central lists less those that the refills
// of every thread took from them (blocks never used before among them: it may be below 0).
inline constinit std::atomic<std::int64_t> g_central_net_bytes{0};

// A thread cache's clock look, new: it counts other threads' refills from now on.
inline ClockLook new_clock_look() {
  ClockLook look;
  look.net_at_look = g_central_net_bytes.load(std::memory_order_relaxed);
  return look;
}

// A thread's flush gave `bytes` to the central lists (its bin's older half, or the whole bin
// during a mass free); its refill took `bytes` from them.
inline void note_bytes_given(ClockLook& look, std::int64_t bytes) {
  look.freed_bytes += bytes;
  g_central_net_bytes.fetch_add(bytes, std::memory_order_relaxed);
}
inline void note_bytes_taken(ClockLook& look, std::int64_t bytes) {
  look.freed_bytes = look.freed_bytes > bytes ? look.freed_bytes - bytes : 0;
  g_central_net_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

// A thread's look at the clock (decay.cpp): runs a decay step when one is due and the decay
// thread does not run them, and returns how many of the thread's mallocs and frees may pass
// before its next look (ThreadCache's pop and push count them down on the fast paths).
std::uint32_t look_at_clock(ClockLook& look);

// Malloc's slow path, holding no allocator lock (creating a thread allocates): starts the decay
// thread when the program needs it (decay_thread.cpp), else notes the work.
void on_malloc_slow_path();

}  // namespace poolalloc::internal
