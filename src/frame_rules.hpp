// How to find a caller's frame from a return address, read from the unwind tables that the
// compilers emit for every function (.eh_frame, indexed by .eh_frame_hdr): the rule that the
// stack walk (stack_walk.hpp) caches per return address. Only the x86-64 rules that compilers
// write for ordinary functions are kept as such: the caller's stack pointer (the CFA) is rsp or
// rbp plus a constant, the return address is saved just below it, and rbp is either untouched or
// saved at a constant offset from the CFA. Anything else (a CFA computed by an expression, as
// for a signal frame or a function that realigns its stack; a return address kept elsewhere) is
// Complex: libunwind walks such stacks. A return address that no loaded object's tables cover,
// or whose rule says it has no caller (_start, a thread's first frame), ends the stack.
#pragma once

#include <bit>
#include <cstdint>

namespace poolalloc::internal {

struct FrameRule {
  enum Kind : std::uint8_t { kEmpty = 0, kSimple, kEnd, kComplex };
  std::int32_t cfa_offset = 0;
  // Where the caller's rbp is saved, from the CFA; 0: rbp is untouched, the caller's is the frame's
  // own (a saved register lies below the CFA, never at it).
  std::int16_t rbp_offset = 0;
  Kind kind = kEmpty;
  bool cfa_from_rbp = false;  // the CFA is rbp + cfa_offset, else rsp + cfa_offset
  // One word, for the lock-free cache (frame_rule_cache.hpp).
  [[nodiscard]] std::uint64_t word() const { return std::bit_cast<std::uint64_t>(*this); }
  static FrameRule from_word(std::uint64_t w) { return std::bit_cast<FrameRule>(w); }
};
static_assert(sizeof(FrameRule) == 8);

// The rule of the frame whose code is at `pc`, where pc is a return address: the call before it
// is what the frame executes, so the function is the one holding pc - 1, and the rule is the one
// in force just after that call (the table's rows up to pc - 1). A pc in the middle of an
// instruction (the stack walk's own starting point) gets the rule at the start of that
// instruction. Asks the dynamic loader which object holds pc (dl_iterate_phdr): the stack walk
// calls it once per return address, then reads its cache.
FrameRule frame_rule_of(std::uintptr_t pc);

}  // namespace poolalloc::internal
