// The stack walk of the heap profile's samples: return addresses from the frame rules that the
// unwind tables give (frame_rules.hpp), cached per return address (frame_rule_cache.hpp), so
// that once a stack's addresses have been seen a frame costs a probe of the cache and two loads
// (the return address and, where the frame saved it, rbp). No frame pointers needed. By
// callgrind: some 30 instructions a frame whose rule is cached (about 300 for the 8 frames of a
// sample in bench's sweep, where libunwind's unw_backtrace took about 785); a miss about 2,400,
// once per return address; a thread's first walk about 60,000, once (/proc/self/maps).
//
// It reads nothing outside the calling thread's stack: the readable mapping that holds the stack
// pointer, found in /proc/self/maps at the thread's first walk (and again when the thread runs
// on another stack), bounds every load, and each frame's CFA must lie above the last. A frame
// whose rule is not simple (signal frames, functions that realign their stack, anything
// computed by a DWARF expression) hands the whole stack to libunwind (stack_capture.hpp); a
// return address that no loaded object's tables cover ends it. x86-64 only: elsewhere every
// walk is handed over.
#pragma once

namespace poolalloc::internal {

// The walk's answer when a frame needs libunwind.
inline constexpr int kWalkNeedsUnwinder = -1;

// Up to `most` return addresses of the calling thread's stack, innermost first, from the return
// address into the caller of walk_stack; their number, or kWalkNeedsUnwinder.
int walk_stack(void** frames, int most);

}  // namespace poolalloc::internal
