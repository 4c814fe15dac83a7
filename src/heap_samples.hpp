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
// `spare_class`: the class plus one of a block of that class's size that may wait as a spare
// once freed (below), else 0. False, recording nothing, when the lock is held for fork() or no
// memory could be had for the tables.
bool record_sample(const void* block, std::size_t size, std::int64_t mean, unsigned spare_class,
                   CapturedStack& stack, std::uint32_t tag, SampleTotals& totals);

// Spare blocks: a sampled block of the pools' sizes is glibc's, of its class's size, and at its
// free it waits here for the next sample of its class rather than going back to glibc, while
// there is room: kMostSpareBlocks blocks and kMostSpareBytes in all. A sample then costs no
// round trip through glibc's malloc and free (some 300 instructions of the 1,000 that a sample and
// its free cost otherwise). They wait one decay step at most: each step gives them all back, as
// do malloc_trim and turning sampling off. A spare near the top of glibc's heap keeps glibc from
// trimming what lies below it: a program that frees its peak would otherwise keep its memory.
// 64 blocks and 1 MiB: a program that keeps 16 MiB live in 16 KiB blocks (the timing suite's
// sweep-16384) has some 31 sampled blocks live at the default mean, more at times; 32 and
// 512 KiB sent many of its samples through glibc's malloc and free (a quarter of the profile's
// time in that row, perf).
inline constexpr std::uint32_t kMostSpareBlocks = 64;
inline constexpr std::size_t kMostSpareBytes = std::size_t{1} << 20;

// What forget_sample did with a block.
enum class Forgotten {
  kNotSampled,   // no live sample (or the lock was held for fork(): its sample goes out later)
  kForgotten,    // its sample left the in-use figures; the caller gives the block back
  kKeptAsSpare,  // and the block waits as a spare: the caller keeps it from glibc
};

// What a live sample put into the in-use figures: its stack's index, the class plus one of a
// block that may wait as a spare (else 0), and its estimates.
struct SampleRecord {
  std::uint32_t stack;
  std::uint32_t spare_class;
  std::int64_t objects;
  std::int64_t bytes;
};

// Takes a live sampled allocation out of the in-use figures (into `removed`, when given), and
// keeps its block as a spare when `may_keep` (a free, not a realloc) and there is room. A block
// that waits as a spare, freed or reallocated again, is reported as a double free (the process
// aborts). `block` is not nullptr.
Forgotten forget_sample(const void* block, bool may_keep, SampleRecord* removed = nullptr);

// Puts back the sample that forget_sample took out of `block`, which a realloc that failed left
// as it was.
void restore_sample(const void* block, const SampleRecord& record);

// A spare block of class `cls` (of class_size(cls) bytes) for a sampled request of `size` bytes,
// recorded as record_sample records (`recorded`: whether it was), under one hold of the lock; or
// nullptr when none waits.
void* record_sample_in_spare(unsigned cls, std::size_t size, std::int64_t mean,
                             CapturedStack& stack, std::uint32_t tag, SampleTotals& totals,
                             bool& recorded);

// Takes every spare block out, into `blocks`, for the caller to give back; their number. Without
// `wait_for_fork`, none while the lock is held for fork().
std::uint32_t take_all_spare_sample_blocks(void* (&blocks)[kMostSpareBlocks], bool wait_for_fork);
// Whether any spare block waits.
bool spare_sample_blocks_wait();

// Whether any sampled allocation is live or any spare waits: frees outside the pools look
// their block up only then.
bool sample_records_hold_blocks();

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
