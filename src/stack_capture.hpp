// The call stack of a sampled allocation, for the heap profile: return addresses, innermost
// first, from the project's own walk of the unwind tables (stack_walk.hpp: a probe of a cache of
// frame rules and two loads a frame, some 30 instructions; no frame pointers needed), or from
// libunwind's unw_backtrace where the walk meets a frame it does not handle (a signal frame, a
// function that realigns its stack beside alloca).
//
// By callgrind (libunwind 1.6.2), unw_backtrace costs some 310 instructions a capture and 79 a
// frame: 708 for 5 frames, 3,868 for 45, whatever unw_set_caching_policy says. It allocates
// nothing but, at a thread's first capture, the block of libunwind's thread-local variables
// (heap_sampler.cpp serves that malloc unsampled); libunwind keeps its caches in memory it maps.
//
// libunwind is loaded only once the profile is turned on, with dlopen and RTLD_LOCAL: a program
// that does not profile gets no library besides poolalloc, and none ever gets libunwind's
// _Unwind_Backtrace and backtrace in place of libgcc's and glibc's. Without libunwind (Debian's
// libunwind8 is not installed) a stack that the walk hands over keeps one frame: the call site.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>

#include "stack_walk.hpp"

namespace poolalloc::internal {

inline constexpr std::uint32_t kMostFrames = 48;

// libunwind's unw_backtrace once loaded, else nullptr.
using Backtrace = int (*)(void** frames, int most);
inline constinit std::atomic<Backtrace> g_backtrace{nullptr};

// Loads libunwind; true when it is there. Called where loading a library is safe: from the
// library's constructor, or from the program's call that turns profiling on, never from inside
// malloc.
bool load_stack_unwinder();

// A thread's last captured stack, kept for its next capture (ThreadCache::last_sample):
// `depth` return addresses from frames(), innermost first. The frames inside the allocator are
// left out: those before `start`, the return address into the program that the exported
// function received (`first`), when it is among them (nullptr: all are kept). No member has an
// initialiser: a cache's constructor writes none of it (thread_cache.hpp), and what a recycled
// cache holds from another thread is a memo as good as any (stack_walk.hpp).
struct CapturedStack {
  void* raw[kMostWalkedFrames];  // room for the allocator's own few frames besides kMostFrames
  std::uint32_t start;
  std::uint32_t depth;
  const void* first;
  // The heap profile's index of this stack and tag, plus one (0: unknown), as record_sample
  // found it: a sample of an unchanged stack under the same tag skips the search. Before the
  // walk's memo, beside what a sample of an unchanged stack reads of the rest.
  std::uint32_t recorded_index;
  std::uint32_t recorded_tag;
  StackWalkMemo walk;
  const void* const* frames() const { return raw + start; }
};
static_assert(kMostWalkedFrames >= kMostFrames + 8, "the allocator's own frames need room");

// At most kMostFrames frames into `stack`, which keeps its recorded_index when they are the ones
// it held (the stack and `first` unchanged since its last capture). Inline, so that the sampling
// function calls the walk itself: each frame of the allocator's own is one more to walk.
[[gnu::always_inline]] inline void capture_stack(CapturedStack& stack, const void* first) {
  int count = walk_stack(stack.raw, kMostWalkedFrames, stack.walk);
  if (count == kWalkUnchanged && first == stack.first) return;
  stack.first = first;
  stack.recorded_index = 0;
  stack.start = 0;
  if (count == kWalkUnchanged) {
    count = static_cast<int>(stack.walk.frames);
  } else if (count == kWalkNeedsUnwinder) {
    const Backtrace backtrace = g_backtrace.load(std::memory_order_acquire);
    if (backtrace == nullptr) {
      stack.raw[0] = const_cast<void*>(first);
      stack.depth = first != nullptr ? 1 : 0;
      return;
    }
    count = std::max(backtrace(stack.raw, kMostWalkedFrames), 0);
  }
  if (first != nullptr) {
    const auto found = std::find(stack.raw, stack.raw + count, first);
    if (found != stack.raw + count) stack.start = static_cast<std::uint32_t>(found - stack.raw);
  }
  stack.depth = std::min(static_cast<std::uint32_t>(count) - stack.start, kMostFrames);
}

}  // namespace poolalloc::internal
