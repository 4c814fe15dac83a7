#include "stack_walk.hpp"

#include <algorithm>
#include <cstdint>

#include "frame_rule_cache.hpp"
#include "platform.hpp"
#include "process_maps.hpp"

namespace poolalloc::internal {
namespace {

// The calling thread's stack, [low, high): the readable mapping that held its stack pointer at
// its last walk (0, 0 before its first).
constinit POOLALLOC_THREAD_LOCAL std::uintptr_t t_stack_low = 0;
constinit POOLALLOC_THREAD_LOCAL std::uintptr_t t_stack_high = 0;
// Set when /proc/self/maps could not be read (no /proc in a chroot, a sandbox): the thread's
// walks are handed over without trying again.
constinit POOLALLOC_THREAD_LOCAL bool t_no_maps = false;

// Finds the mapping that holds sp; false when none does or it cannot be read.
bool find_stack(std::uintptr_t sp) {
  if (t_no_maps) return false;
  char buffer[512];  // a longer line, a long path, is skipped: a stack's has none
  ProcessMapsReader reader(buffer, sizeof buffer);
  ProcessMapping mapping;
  if (!reader.next(mapping)) {
    t_no_maps = reader.failed();
    return false;
  }
  do {
    if (mapping.start > sp) break;
    if (sp < mapping.end) {
      if (!mapping.readable) return false;
      t_stack_low = mapping.start;
      t_stack_high = mapping.end;
      return true;
    }
  } while (reader.next(mapping));
  return false;
}

// A word of the stack. The walk reads slots that the compiler's code wrote (return addresses and
// saved registers), which AddressSanitizer may count as another frame's.
[[gnu::no_sanitize_address]] std::uintptr_t stack_word(std::uintptr_t address) {
  return *reinterpret_cast<const std::uintptr_t*>(address);
}

// Whether the stack words that `memo` kept hold what they held.
bool memo_holds(const StackWalkMemo& memo, std::uintptr_t high) {
  if (memo.highest >= high) return false;  // another stack now, which ends below a word
  std::uintptr_t differences = 0;
  for (std::uint32_t i = 0; i < memo.loads; ++i)
    differences |= stack_word(memo.load[i].address) ^ memo.load[i].value;
  return differences == 0;
}

}  // namespace

int walk_stack(void** frames, int most, StackWalkMemo& memo) {
#if defined(__x86_64__)
  // The walk starts here: the pc of an instruction (one byte into it, never a return address, so
  // that its cached rule is the one at this instruction), and the registers it reads.
  std::uintptr_t pc;
  std::uintptr_t sp;
  std::uintptr_t rbp;
  asm volatile(
      "leaq 1f+1(%%rip), %0\n"
      "1: movq %%rsp, %1\n"
      "movq %%rbp, %2"
      : "=r"(pc), "=r"(sp), "=r"(rbp));
  if ((sp < t_stack_low || sp >= t_stack_high) && !find_stack(sp)) return kWalkNeedsUnwinder;
  const std::uintptr_t high = t_stack_high;
  if (sp == memo.start_sp && (!memo.uses_start_rbp || rbp == memo.start_rbp) &&
      memo_holds(memo, high))
    return kWalkUnchanged;
  memo.start_sp = 0;  // kept again below once the walk ends as the memo can tell
  const std::uintptr_t start_sp = sp;
  const std::uintptr_t start_rbp = rbp;
  bool uses_start_rbp = false;
  // Where rbp was last loaded from (0: it is the start's), and whether that load is kept.
  std::uintptr_t rbp_address = 0;
  bool rbp_load_kept = false;
  std::uint32_t loads = 0;
  const auto keep_load = [&](std::uintptr_t address, std::uintptr_t value) {
    memo.load[loads] = {address, value};
    ++loads;
  };
  void** out = frames;
  void** const end = frames + std::min(most, kMostWalkedFrames);  // the memo's room
  for (;;) {
    const FrameRule rule = g_frame_rules.rule_of(pc);
    if (rule.kind() != FrameRule::kSimple) [[unlikely]] {
      if (rule.kind() != FrameRule::kEnd) return kWalkNeedsUnwinder;
      break;
    }
    if (rule.cfa_from_rbp()) {
      if (rbp_address == 0) {
        uses_start_rbp = true;
      } else if (!rbp_load_kept) {
        keep_load(rbp_address, rbp);
        rbp_load_kept = true;
      }
    }
    const std::uintptr_t cfa = (rule.cfa_from_rbp() ? rbp : sp) +
                               static_cast<std::uintptr_t>(std::intptr_t{rule.cfa_offset()});
    // The return address at cfa - 8 and the saved rbp below it lie in [sp, high).
    if (cfa < sp + 8 || cfa > high) [[unlikely]]
      return kWalkNeedsUnwinder;
    if (rule.rbp_offset() != 0) {
      const std::uintptr_t saved =
          cfa + static_cast<std::uintptr_t>(std::intptr_t{rule.rbp_offset()});
      if (saved < sp) [[unlikely]]
        return kWalkNeedsUnwinder;
      rbp = stack_word(saved);
      rbp_address = saved;
      rbp_load_kept = false;
    }
    pc = stack_word(cfa - 8);
    keep_load(cfa - 8, pc);
    sp = cfa;
    if (pc == 0 || out == end) break;
    *out++ = reinterpret_cast<void*>(pc);
  }
  // Each load lies below the CFA of its frame, and the last frame's is the highest.
  memo.highest = sp - 1;
  memo.start_sp = start_sp;
  memo.start_rbp = start_rbp;
  memo.uses_start_rbp = uses_start_rbp;
  memo.loads = loads;
  memo.frames = static_cast<std::uint32_t>(out - frames);
  return static_cast<int>(out - frames);
#else
  (void)frames;
  (void)most;
  (void)memo;
  return kWalkNeedsUnwinder;
#endif
}

}  // namespace poolalloc::internal
