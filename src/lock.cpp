#include "lock.hpp"

#include "os.hpp"

namespace poolalloc::internal {

// Spin briefly (the holder is usually a few hundred instructions from unlocking), then sleep
// on the futex, marking the lock contended so that unlock knows to wake someone. The state
// changes by compare-and-swap only, so kForkHeld is never overwritten: a sleeper is woken by
// the forking thread's wake-all and then sees kForkHeld (or its futex wait fails at once
// because the word is no longer kContended). Returns false when giving up for a fork.
bool Lock::lock_contended(bool give_up_when_forking) {
  for (int spin = 0; spin < 100; ++spin) {
    if (give_up_when_forking && state_.load(std::memory_order_acquire) == kForkHeld) return false;
    int expected = kFree;
    if (state_.load(std::memory_order_relaxed) == kFree &&
        state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire))
      return true;
    os_spin_pause();
  }
  int state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (state == kFree) {
      // Taken as contended: another sleeper may still be waiting.
      if (state_.compare_exchange_weak(state, kContended, std::memory_order_acquire)) return true;
      continue;
    }
    if (state == kForkHeld && give_up_when_forking) return false;
    if (state == kLocked &&
        !state_.compare_exchange_weak(state, kContended, std::memory_order_acquire))
      continue;
    // kContended, or kForkHeld for a caller that waits: sleep while the word holds that value.
    os_futex_wait(state_, state == kLocked ? kContended : state);
    state = state_.load(std::memory_order_acquire);
  }
}

void Lock::wake(int waiters) {
  os_futex_wake(state_, waiters);
}

}  // namespace poolalloc::internal
