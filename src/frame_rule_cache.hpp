// The frame rules of return addresses already seen (frame_rules.hpp), for the stack walk: one
// table for the process, fixed in size (4,096 slots of 16 bytes, zero until used), without a lock
// and without allocating. A hit is a hash, a compare and three loads; a miss reads the unwind
// tables and keeps the rule, replacing one of the four slots of its probe when they are all
// taken. A miss that finds that an object was unloaded (dlclose) since the last one forgets every
// rule: another object mapped where it was would share its addresses.
//
// Each slot is a key (the return address; 0: empty, 1: being written) and the rule, written
// under the key as under a sequence lock: a writer claims the slot by swapping its key for 1,
// stores the rule, then the new key. A reader takes the rule when the key reads the same before
// and after it; the release of the rule's store and the acquire of its load order a writer's
// claim before the second read of a reader that saw its rule.
#pragma once

#include <atomic>
#include <cstdint>

#include "frame_rules.hpp"

namespace poolalloc::internal {

class FrameRuleCache {
 public:
  static constexpr std::uint32_t kSlotBits = 12;
  static constexpr std::uint32_t kProbes = 4;

  // The rule of the frame at the return address `pc`, from the cache or the unwind tables.
  FrameRule rule_of(std::uintptr_t pc) {
    const std::uint32_t home = home_of(pc);
    for (std::uint32_t i = 0; i < kProbes; ++i) {
      Slot& slot = slots_[(home + i) & kMask];
      const std::uintptr_t key = slot.key.load(std::memory_order_acquire);
      if (key == pc) {
        const std::uint64_t rule = slot.rule.load(std::memory_order_acquire);
        if (slot.key.load(std::memory_order_relaxed) == pc) return FrameRule::from_word(rule);
        break;
      }
      // Slots are filled in probe order and emptied only all at once (forget_all): an empty
      // one ends the probe; a slot emptied under a concurrent write costs a miss, never a
      // wrong rule.
      if (key == kEmpty) break;
    }
    return fill(pc, home);
  }

 private:
  static constexpr std::uint32_t kMask = (1u << kSlotBits) - 1;
  static constexpr std::uintptr_t kEmpty = 0;
  static constexpr std::uintptr_t kWriting = 1;  // never a return address

  struct Slot {
    std::atomic<std::uintptr_t> key{kEmpty};
    std::atomic<std::uint64_t> rule{0};
  };

  static std::uint32_t home_of(std::uintptr_t pc) {
    return static_cast<std::uint32_t>((pc * 0x9e3779b97f4a7c15) >> (64 - kSlotBits));
  }

  // Reads the rule from the tables and keeps it.
  [[gnu::noinline]] FrameRule fill(std::uintptr_t pc, std::uint32_t home);
  // Empties every slot but those being written.
  void forget_all();

  Slot slots_[std::size_t{1} << kSlotBits];
  std::atomic<unsigned long long> unloads_{0};  // the loader's count at the last miss
};

// The process's cache.
extern constinit FrameRuleCache g_frame_rules;

}  // namespace poolalloc::internal
