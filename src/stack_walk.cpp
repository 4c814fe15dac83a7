#include "stack_walk.hpp"

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

}  // namespace

int walk_stack(void** frames, int most) {
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
  void** out = frames;
  void** const end = frames + most;
  for (;;) {
    const FrameRule rule = g_frame_rules.rule_of(pc);
    if (rule.kind() != FrameRule::kSimple) [[unlikely]]
      return rule.kind() == FrameRule::kEnd ? static_cast<int>(out - frames) : kWalkNeedsUnwinder;
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
    }
    pc = stack_word(cfa - 8);
    sp = cfa;
    if (pc == 0 || out == end) return static_cast<int>(out - frames);
    *out++ = reinterpret_cast<void*>(pc);
  }
#else
  (void)frames;
  (void)most;
  return kWalkNeedsUnwinder;
#endif
}

}  // namespace poolalloc::internal
