// Decay: memory that went unused for a whole period goes back, without the program calling
// anything. Nothing runs in the background and the fast paths do no work for it: the thread
// caches' slow paths count their entries and read a coarse clock every few of them, and the
// thread that finds a period over runs one decay step:
// - the caches of threads that ran no slow path during the whole last period (idle, or gone
//   without their exit flush) give their blocks back into the spans (thread_cache.cpp says how
//   another thread can take them without stopping their owner);
// - the recycled caches of exited threads give back the slot pages they kept (thread_cache.cpp);
// - the central stacks go back into their spans: blocks that cycle between caches and stacks
//   would otherwise keep the live set spread over every span the program ever touched (a burst
//   freed in random order leaves the stacked blocks pinning thousands of spans);
// - the retained empty spans that no carve reached during the period go back to the OS;
// - the flush epoch moves on, and each thread empties its whole cache into the spans at its next
//   slow path, so that its refills come from few spans and the spans that only scattered cached
//   blocks kept alive empty and are released.
// Period: POOLALLOC_DECAY_MS, 1000 by default; 0 runs a step at every clock check.
#pragma once

#include <atomic>
#include <cstdint>

namespace poolalloc::internal {

// A thread cache whose flush epoch differs from this one empties itself into the spans at its
// next slow path. malloc_trim moves it too.
inline constinit std::atomic<std::uint32_t> g_flush_epoch{0};

// How many slow-path entries of one thread pass between two readings of the clock.
inline constexpr std::uint32_t kSlowPathsPerClockCheck = 16;

// Called by slow paths every kSlowPathsPerClockCheck entries: runs a decay step when a period
// ended since the last one (one thread per period; the others return at once). Takes the
// central, span and registry locks, never two at once, so it holds none across another.
void decay_if_due();

// Moves the flush epoch on: every thread cache empties itself at its next slow path.
inline void request_cache_flush() {
  g_flush_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace poolalloc::internal
