// The heap profile's sampler: how a sampled allocation is served and recorded.
//
// Sampling is by bytes: each thread counts down the bytes its mallocs ask for, on malloc's fast
// path (ThreadCache::pop) and in count_malloc_bytes on the slow paths, which every request above
// the pools takes, from a distance drawn from an exponential distribution with the mean that the
// options set (sample_distance.hpp). The request that crosses zero is sampled and a new distance
// is drawn; as the distribution has no memory, every allocation of `size` bytes is sampled with
// the same chance, 1 - e^(-size/mean), whatever came before it (heap_samples.hpp weighs the
// samples by it). The countdown is the one malloc counts down to the thread's look at the clock:
// the fast path pays for one.
//
// A sampled request is served by the system allocator, whatever its size, so that its free,
// which then leaves the pool region, finds it on a path that is slow already (free_unpooled):
// the pools' fast paths never look for samples. A request of the pools' sizes gets a block of
// its class's size, which may wait as a spare after its free for the next sample of its class
// (heap_samples.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "heap_samples.hpp"

namespace poolalloc::internal {

// Sets the mean (0: off), and loads the unwinder when it turns sampling on: called from the
// library's constructor or from the program, never from inside malloc (stack_capture.hpp). The
// calling thread draws its distance again at its next malloc, the others at their next malloc's
// slow path (within a few thousand mallocs: their looks at the clock send them there).
void set_sample_mean(std::int64_t mean);

// Serves a sampled request from the system allocator and records its call stack; `site` is the
// return address into the program (nullptr: unknown). nullptr with errno ENOMEM on failure.
void* allocate_sampled(std::size_t size, std::size_t alignment, const void* site);

// realloc of p outside the pool region, for the heap profile a free and an allocation, which may
// be sampled. p's sample leaves the in-use figures first (once glibc has freed p, another thread
// may be handed the address and sample it), and comes back if glibc fails to resize p. A sampled
// new block is one the sampler records, into which p moves; p's charge leaves its memory tag
// before the new block's is made, so that no tag holds both.
void* reallocate_outside_pools(void* p, std::size_t size, const void* site);

// The spare blocks go back to glibc: at malloc_trim and when sampling is turned off, which wait
// for a fork in progress, and at a decay step and a free or realloc outside the pools
// (`wait_for_fork` false: none go back while another thread forks).
void give_back_spare_sample_blocks(bool wait_for_fork = true);

// A free of p outside the pool region: a sampled allocation leaves the profile's in-use figures.
// True when p was kept as a spare: the caller gives it to nobody. A free of any other block,
// which glibc may trim its heap after, gives the spares back first: a spare above it would keep
// glibc from trimming down to it. A free of nullptr frees nothing, and never reaches
// forget_sample, whose address while fork() holds the samples' lock must not be 0
// (heap_samples.cpp, defer_forget).
inline bool forget_if_sampled(const void* p) {
  if (p == nullptr || !sample_records_hold_blocks()) [[likely]]
    return false;
  if (forget_sample(p, true) == Forgotten::kKeptAsSpare) return true;
  give_back_spare_sample_blocks(false);
  return false;
}

}  // namespace poolalloc::internal
