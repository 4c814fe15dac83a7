// When and where the heap profile is written (docs/profiling.md): on a call, on the signal an
// option names, at exit, every POOLALLOC_PROFILE_EVERY bytes allocated and at each new peak of
// the live heap above POOLALLOC_PROFILE_PEAK. The sampler (heap_sampler.hpp) gathers it; the
// writer (profile_format.hpp) writes pprof's format. A dump allocates nothing and holds no lock
// while it writes: it copies the sampled stacks first (heap_samples.hpp), so that other threads
// allocate, and sample, on.
#pragma once

#include <linux/limits.h>

#include <cstdint>

#include "heap_samples.hpp"
#include "profile_format.hpp"

namespace poolalloc::internal {

// "<prefix>.<pid>.<n>.<why>.pb" (without `numbered`: "<prefix>.<pid>.<why>.pb"), the prefix
// being POOLALLOC_PROFILE_PREFIX's; false when it is too long for a path.
bool automatic_path(char (&path)[PATH_MAX], const char* why, bool numbered);

// Where poolalloc_profile_dump(path) writes: `path`, or when it is nullptr an automatic path
// (in `automatic`) with "dump" for reason; nullptr with errno ENAMETOOLONG when that is too long.
const char* dump_path(const char* path, char (&automatic)[PATH_MAX]);

// Writes a profile (profile_format.hpp) to the file at `path`, created or emptied; false with
// errno when it could not.
bool write_profile_file(const char* path, std::int64_t period, NextSample next, void* context);

// At start-up: sampling as the options say, and the signal's handler if one is named.
void start_heap_profile();

// After a sample was recorded (its thread holds no lock): the dumps its totals call for, and one
// that a signal left pending.
void after_sample(const SampleTotals& totals);

// A signal's dump that found the samples' lock held (by the thread it interrupted, perhaps) is
// written by the next thread to record or forget a sample.
void serve_pending_profile_dump();

// Writes the profile to `path` (nullptr: a name made of the prefix option, the process id and a
// sequence number). 0, or -1 with errno: the file could not be written, or EAGAIN while fork()
// holds the samples.
int dump_heap_profile(const char* path);

// At exit, when profiling is on and POOLALLOC_PROFILE_AT_EXIT is not 0.
void dump_heap_profile_at_exit();

}  // namespace poolalloc::internal
