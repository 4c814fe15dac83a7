// The heap profile's records (heap_sampler.hpp decides what is sampled): each sampled call
// stack with what its samples add up to, and the sampled allocations still live, by address, so
// that a free takes its sample out of the in-use figures. Both tables live in memory of their
// own (mmap), grow by doubling, and are guarded by one lock, under which nothing but os_map and
// os_unmap is called (lock.hpp's order: last).
//
// A sample of `size` bytes drawn at a mean distance of `mean` bytes stands for 1/p allocations
// and size/p bytes, p = 1 - e^(-size/mean) being the chance that an allocation of that size is
// sampled at all: so every total is an unbiased estimate, for small and large sizes alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_capture.hpp"

namespace poolalloc::internal {

// Estimated counts of allocations are kept in units of 1/kCountUnit, so that a free takes out
// exactly what its sample put in.
inline constexpr std::int64_t kCountUnit = std::int64_t{1} << 16;

// One call stack (with the memory tag current at the allocations) and its samples' estimates.
struct SampledStack {
  std::uint64_t hash;
  std::uint32_t depth;
  std::uint32_t tag;
  const void* frames[kMostFrames];
  std::int64_t alloc_objects;  // in 1/kCountUnit
  std::int64_t alloc_bytes;
  std::int64_t inuse_objects;  // in 1/kCountUnit
  std::int64_t inuse_bytes;
};

// What all samples add up to: bytes allocated since start-up and bytes in use now (estimates).
struct SampleTotals {
  std::int64_t alloc_bytes;
  std::int64_t inuse_bytes;
};

// Records the sampled allocation `block` of `size` bytes, at the call stack `stack` under memory
// tag `tag`, and keeps in the stack the index it was recorded at (CapturedStack::recorded_index).
// False, recording nothing, when the lock is held for fork() or no memory could be had for the
// tables.
bool record_sample(const void* block, std::size_t size, std::int64_t mean, CapturedStack& stack,
                   std::uint32_t tag, SampleTotals& totals);

// Takes a live sampled allocation out of the in-use figures; false when `block` is none, or when
// the lock is held for fork(): its sample then goes out at the lock's next holder.
bool forget_sample(const void* block);

// Whether any sampled allocation is live: frees outside the pools look `block` up only then.
bool samples_live();

// A copy of every sampled stack, taken under the lock in memory of its own, so that a profile
// is written without holding it (other threads sample meanwhile). Not `taken` when no
// memory could be had or the lock is held for fork(), and with `without_waiting` (a signal
// handler, which may have interrupted the lock's holder) when the lock is held at all.
struct SampleSnapshot {
  bool taken = false;  // false: no snapshot could be taken (the reasons above)
  SampledStack* stacks = nullptr;
  std::uint32_t count = 0;
  std::size_t mapped_bytes = 0;
};
SampleSnapshot take_sample_snapshot(bool without_waiting);
void release_sample_snapshot(SampleSnapshot& snapshot);

void lock_samples_for_fork();
void unlock_samples_after_fork(bool in_child);

}  // namespace poolalloc::internal
