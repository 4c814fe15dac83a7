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

#include <cstdint>

namespace poolalloc::internal {

// One word, for the lock-free cache (frame_rule_cache.hpp) and for the walk to take apart with a
// shift or two: bits 0-31 the CFA's offset, 32-47 rbp's, 48-55 the kind, 56-63 whether the CFA
// is from rbp.
class FrameRule {
 public:
  enum Kind : std::uint8_t { kEmpty = 0, kSimple, kEnd, kComplex };

  static constexpr FrameRule of_kind(Kind kind) { return FrameRule{std::uint64_t{kind} << 48}; }
  // The CFA is rbp + cfa_offset when cfa_from_rbp, else rsp + cfa_offset; the caller's rbp is
  // saved at CFA + rbp_offset, or is the frame's own when rbp_offset is 0 (a saved register lies
  // below the CFA, never at it).
  static constexpr FrameRule simple(bool cfa_from_rbp, std::int32_t cfa_offset,
                                    std::int16_t rbp_offset) {
    return FrameRule{static_cast<std::uint32_t>(cfa_offset) |
                     std::uint64_t{static_cast<std::uint16_t>(rbp_offset)} << 32 |
                     std::uint64_t{kSimple} << 48 | std::uint64_t{cfa_from_rbp} << 56};
  }
  static constexpr FrameRule from_word(std::uint64_t word) { return FrameRule{word}; }

  [[nodiscard]] constexpr std::uint64_t word() const { return word_; }
  [[nodiscard]] constexpr Kind kind() const { return static_cast<Kind>(word_ >> 48 & 0xff); }
  [[nodiscard]] constexpr bool cfa_from_rbp() const { return (word_ >> 56) != 0; }
  [[nodiscard]] constexpr std::int32_t cfa_offset() const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(word_));
  }
  [[nodiscard]] constexpr std::int16_t rbp_offset() const {
    return static_cast<std::int16_t>(static_cast<std::uint16_t>(word_ >> 32));
  }

 private:
  constexpr explicit FrameRule(std::uint64_t word) : word_(word) {}
  std::uint64_t word_;
};
static_assert(sizeof(FrameRule) == 8);

// The rule of the frame whose code is at `pc`, where pc is a return address: the call before it
// is what the frame executes, so the function is the one holding pc - 1, and the rule is the one
// in force just after that call (the table's rows up to pc - 1). A pc in the middle of an
// instruction (the stack walk's own starting point) gets the rule at the start of that
// instruction. Asks the dynamic loader which object holds pc (dl_iterate_phdr): the stack walk
// calls it once per return address, then reads its cache. `unloads` is the number of objects
// unloaded so far in the process (dlclose), which the loader counts: rules read before an unload
// may describe code that is gone.
struct LookedUpRule {
  FrameRule rule;
  unsigned long long unloads;
};
LookedUpRule frame_rule_of(std::uintptr_t pc);

}  // namespace poolalloc::internal
