// The call stack of a sampled allocation, for the heap profile: return addresses, innermost
// first, from libunwind's unw_backtrace, which reads the unwind tables (no frame pointers
// needed) and caches what it learns per address, so that a capture after the first few costs
// about 120 ns for 14 frames (libgcc's _Unwind_Backtrace took 9.6 us for the same stack, on
// the project's machine). It allocates nothing: libunwind keeps its caches in memory it maps.
//
// libunwind is loaded only once the profile is turned on, with dlopen and RTLD_LOCAL: a program
// that does not profile gets no library besides poolalloc, and none ever gets libunwind's
// _Unwind_Backtrace and backtrace in place of libgcc's and glibc's. Without libunwind (Debian's
// libunwind8 is not installed) a sample keeps one frame: the call site.
#pragma once

#include <cstdint>

namespace poolalloc::internal {

inline constexpr std::uint32_t kMostFrames = 48;

// Loads libunwind; true when it is there. Called where loading a library is safe: from the
// library's constructor, or from the program's call that turns profiling on, never from inside
// malloc.
bool load_stack_unwinder();

// Writes at most kMostFrames return addresses into `frames` and returns how many. The frames
// inside the allocator are left out: those before `first`, the return address into the
// program that the exported function received, when it is among them (nullptr: all are kept).
std::uint32_t capture_stack(const void** frames, const void* first);

}  // namespace poolalloc::internal
