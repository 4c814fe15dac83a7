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
//
// A walk keeps the stack words it read (StackWalkMemo): a thread that samples again from the
// same place (a loop that allocates) reads those words again and, when none changed, has the
// stack it had, at some 4 instructions a frame. The walk is a function of its starting stack
// pointer, the words it loads and the cached rules of the return addresses among them: the same
// start and the same words at the same addresses give the same walk, whichever thread makes it.
// rbp, which code built without frame pointers uses as any other register (a loop's counter),
// is kept only where a frame's CFA is computed from it.
#pragma once

#include <cstdint>

namespace poolalloc::internal {

// The walk's answers when a frame needs libunwind, and when the stack is the memo's.
inline constexpr int kWalkNeedsUnwinder = -1;
inline constexpr int kWalkUnchanged = -2;

// The most return addresses a walk gives.
inline constexpr int kMostWalkedFrames = 56;

// The stack words that a walk read and what they held: a load of a return address for each
// frame, and of a saved rbp where a later frame's CFA was computed from it. No member has an
// initialiser (thread caches hold one, untouched until their thread samples): all zero is a
// memo of nothing.
struct StackWalkMemo {
  static constexpr int kMostLoads = 2 * (kMostWalkedFrames + 1);  // two a frame, and the last's
  std::uintptr_t start_sp;                                        // 0: nothing kept
  std::uintptr_t start_rbp;
  bool uses_start_rbp;     // whether the walk read rbp as the walk started with it
  std::uint32_t frames;    // what the walk answered
  std::uintptr_t highest;  // at or above every address below
  std::uint32_t loads;
  // Each load's address and the word it read side by side, as a check of the memo reads them: in
  // as few cache lines as there are loads for (9 for the sample of bench's sweep: 3 lines, where
  // two arrays took 4).
  struct Load {
    std::uintptr_t address;
    std::uintptr_t value;
  } load[kMostLoads];
};

// Up to `most` (at most kMostWalkedFrames) return addresses of the calling thread's stack,
// innermost first, from the return address into the caller of walk_stack; their number, or
// kWalkNeedsUnwinder, or kWalkUnchanged when the stack holds what it held at the walk that
// `memo` kept and `frames` was given then (frames is then left as that walk wrote it).
int walk_stack(void** frames, int most, StackWalkMemo& memo);

}  // namespace poolalloc::internal
