// The heap profile's sampler: which allocations are sampled, and how a sampled one is served.
//
// Sampling is by bytes: each thread counts down the bytes its mallocs ask for (ThreadCache::pop
// on the fast path, sample_due on the slow paths, which every request above the pools takes),
// from a distance drawn from an exponential distribution with the mean that the options set.
// The request that crosses zero is sampled and a new distance is drawn; as the distribution has
// no memory, every allocation of `size` bytes is sampled with the same chance,
// 1 - e^(-size/mean), whatever came before it (heap_samples.hpp weighs the samples by it).
//
// A sampled request is served by the system allocator, whatever its size, so that its free,
// which then leaves the pool region, finds it on a path that is slow already (free_unpooled):
// the pools' fast paths never look for samples. While sampling is off, a thread's countdown is
// kNoSampleBytes, which no program reaches: the fast path's cost is the countdown's subtraction
// and branch (2 instructions).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "heap_samples.hpp"

namespace poolalloc::internal {

inline constexpr std::int64_t kNoSampleBytes = INT64_MAX;

// The mean distance between samples in bytes; 0 while sampling is off (the default).
inline constinit std::atomic<std::int64_t> g_sample_mean{0};

// Sets the mean (0: off), and loads the unwinder when it turns sampling on: called from the
// library's constructor or from the program, never from inside malloc (stack_capture.hpp). The calling thread draws its countdown again at its next malloc, the
// others at their next slow path (within a few thousand mallocs: decay's look at the clock
// sends every thread there that often).
void set_sample_mean(std::int64_t mean);

// Counts a malloc of `size` bytes that reached a slow path, unless the fast path counted it;
// true when it is to be sampled.
bool sample_due(std::size_t size);

// Serves a sampled request from the system allocator and records its call stack; `site` is the
// return address into the program (nullptr: unknown). nullptr with errno ENOMEM on failure.
void* allocate_sampled(std::size_t size, std::size_t alignment, const void* site);

// A free, or a realloc, of p outside the pool region: a sampled allocation leaves the profile's
// in-use figures.
inline void forget_if_sampled(const void* p) {
  if (samples_live()) [[unlikely]]
    forget_sample(p);
}

}  // namespace poolalloc::internal
