// A heap profile written as pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
// uncompressed, which `go tool pprof` reads: each mapping carries its file's path, its offset in
// the file and the file's GNU build ID, and each location the function that holds it, named from
// the symbol tables of the files that the process had mapped. The writer runs inside malloc's
// library, maybe while other threads allocate, in a signal handler or in a fork child: it calls
// no malloc and nothing that allocates, takes no lock, and keeps its tables and its output buffer
// in memory mapped from the OS for the one call, so that it needs little stack.
#pragma once

#include <cstdint>

namespace poolalloc::internal {

// One sample of a heap profile: a call stack, innermost frame first (return addresses, as an
// unwinder gives them), and the four values of pprof's heap profiles.
struct ProfileSample {
  const void* const* frames = nullptr;
  std::uint32_t depth = 0;
  std::int64_t alloc_objects = 0;
  std::int64_t alloc_space = 0;
  std::int64_t inuse_objects = 0;
  std::int64_t inuse_space = 0;
  // The memory tag's name, written as the string label "tag"; nullptr: none.
  const char* tag = nullptr;
};

// Gives the samples one after another: true and *out filled, or false at the end. What *out
// points to must stay valid until the next call.
using NextSample = bool (*)(void* context, ProfileSample* out);

// Writes a whole profile to `fd`: the sample types alloc_objects/count, alloc_space/bytes,
// inuse_objects/count and inuse_space/bytes (inuse_space the default), the period type
// space/bytes with `period` (the sampler's mean distance in bytes; 0 for an exact profile), the
// time, the samples with one location per distinct address, the function of each location that
// a symbol of its file covers, and a mapping for each executable mapping of a file in
// /proc/self/maps, the program's first. Allocates nothing. True when every
// byte was written; false when a write failed (errno says why), when /proc/self/maps could not
// be read, or when no memory was to be had for the writer's tables (the file is then
// incomplete).
bool write_profile(int fd, std::int64_t period, NextSample next, void* context);

}  // namespace poolalloc::internal
