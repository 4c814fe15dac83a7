#include "frame_rule_cache.hpp"

namespace poolalloc::internal {

constinit FrameRuleCache g_frame_rules;

FrameRule FrameRuleCache::fill(std::uintptr_t pc, std::uint32_t home) {
  const auto [rule, unloads] = frame_rule_of(pc);
  if (unloads != unloads_.load(std::memory_order_relaxed)) {
    unloads_.store(unloads, std::memory_order_relaxed);
    forget_all();
  }
  // The first empty slot of the probe, else the one among the four that pc's bits pick.
  Slot* victim = &slots_[(home + ((pc >> 4) & (kProbes - 1))) & kMask];
  for (std::uint32_t i = 0; i < kProbes; ++i) {
    Slot& slot = slots_[(home + i) & kMask];
    const std::uintptr_t key = slot.key.load(std::memory_order_relaxed);
    if (key == pc) return rule;  // another thread kept it meanwhile
    if (key == kEmpty) {
      victim = &slot;
      break;
    }
  }
  std::uintptr_t key = victim->key.load(std::memory_order_relaxed);
  // A slot that another thread writes is left to it: this rule is kept at a later miss.
  if (key == kWriting ||
      !victim->key.compare_exchange_strong(key, kWriting, std::memory_order_acq_rel))
    return rule;
  victim->rule.store(rule.word(), std::memory_order_release);
  victim->key.store(pc, std::memory_order_release);
  return rule;
}

void FrameRuleCache::forget_all() {
  for (Slot& slot : slots_) {
    std::uintptr_t key = slot.key.load(std::memory_order_relaxed);
    // A reader that took the rule sees the key change and misses.
    if (key != kEmpty && key != kWriting)
      slot.key.compare_exchange_strong(key, kEmpty, std::memory_order_acq_rel);
  }
}

}  // namespace poolalloc::internal
