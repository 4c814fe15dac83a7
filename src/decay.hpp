// Decay: memory that went unused for a period goes back, without the program calling anything.
// The fast paths do no work for it. A decay step runs every third of the period:
// - the caches of threads that ran no slow path since the previous step (idle, or gone without
//   their exit flush) give their blocks back into the spans (thread_cache.cpp says how another
//   thread can take them without stopping their owner), so a thread idle for two thirds of a
//   period has given its cache back;
// - the recycled caches of exited threads give back the slot pages they kept (thread_cache.cpp);
// - the central stacks go back into their spans: blocks that cycle between caches and stacks
//   would otherwise keep the live set spread over every span the program ever touched (a burst
//   freed in random order leaves the stacked blocks pinning thousands of spans);
// - the retained empty spans that no carve reached since the previous step go back to the OS;
// - the flush epoch moves on, and each thread empties its whole cache into the spans at its next
//   slow path, so that its refills come from few spans and the spans that only scattered cached
//   blocks kept alive empty and are released.
// Who runs the steps: the decay thread (decay_thread.hpp) once the pools have grown past a few
// MiB; before that, or where it cannot run, the thread caches' slow paths, which count their
// entries and read a coarse clock every few of them (the thread that finds a step due runs it).
// Period: POOLALLOC_DECAY_MS, 1000 by default; 0 runs a step at every clock check of a slow
// path, with no decay thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace poolalloc::internal {

// A thread cache whose flush epoch differs from this one empties itself into the spans at its
// next slow path. malloc_trim moves it too, and so does every decay step: a cache whose epoch
// is behind at a step ran no slow path since the previous one (it is idle).
inline constinit std::atomic<std::uint32_t> g_flush_epoch{0};

// How many slow-path entries of one thread pass between two readings of the clock.
inline constexpr std::uint32_t kSlowPathsPerClockCheck = 16;

// Decay steps per period.
inline constexpr std::uint64_t kStepsPerPeriod = 3;

// Milliseconds between two steps: the period over kStepsPerPeriod.
std::uint64_t step_interval_ms();

// One decay step. True when it found memory to give back, now or at a later step (blocks in
// the central stacks or in thread caches, retained empty spans): the decay thread sleeps after
// a step that found none. Takes the central, span and registry locks, never two at once, so it
// holds none across another.
bool decay_step();

// Called by slow paths every kSlowPathsPerClockCheck entries: runs a decay step when one is due
// (one thread per step; the others return at once), unless the decay thread runs them.
void decay_if_due();

// Moves the flush epoch on: every thread cache empties itself at its next slow path.
inline void request_cache_flush() {
  g_flush_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace poolalloc::internal
