// Decay: memory that went unused for a period goes back, without the program calling anything.
// A decay step runs every third of the period:
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
// Who runs the steps: the decay thread (decay_thread.hpp) in a program that runs threads of its
// own; else the program's own calls. Each thread looks at a coarse clock every few of its slow
// paths, and at the latest after a number of its mallocs and frees that the fast paths count
// down (ThreadCache's pop and push): kCallsPerClockCheck while the pools are settled, and 1, a
// look at every call, while memory waits to go back (a step gave back a MiB or more, or the
// thread's frees gave the central lists that much more than its refills took since its last look).
// So a single-threaded program whose traffic never leaves the fast path, or that makes one call a
// second, runs the steps that a peak calls for, and a busy one looks at the clock once in
// 4096 calls. The thread that finds a step due runs it.
// Period: POOLALLOC_DECAY_MS, 1000 by default; 0 runs a step at every look at the clock, with no
// decay thread.
#pragma once

#include <cstdint>

namespace poolalloc::internal {

// Decay steps per period.
inline constexpr std::uint64_t kStepsPerPeriod = 3;

// Calls of a thread between two looks at the clock while the pools are settled.
inline constexpr std::uint32_t kCallsPerClockCheck = 4096;

// Milliseconds between two steps: the period over kStepsPerPeriod.
std::uint64_t step_interval_ms();

// One decay step (`a_calls_part`: the part of it that one call of the program runs, decay.cpp).
// True when it found memory to give back, now or at a later step (blocks in the central stacks
// or in thread caches, retained empty spans): the decay thread sleeps after a step that found
// none. Takes the central, span and registry locks, never two at once, so it holds none across
// another.
bool decay_step(bool a_calls_part = false);

// What malloc_trim(0) gives back of the pools and the large-block cache (not glibc's own heap):
// every thread's cached blocks, the central stacks, the pages of free blocks, the retained spans
// and the cached large blocks. True when pages of the pools went back to the OS.
bool release_unused_memory();

}  // namespace poolalloc::internal
