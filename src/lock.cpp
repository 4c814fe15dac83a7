#include "lock.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace poolalloc::internal {
namespace {

long futex(std::atomic<int>* word, int op, int value) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
  return syscall(SYS_futex, reinterpret_cast<int*>(word), op | FUTEX_PRIVATE_FLAG, value, nullptr,
                 nullptr, 0);
}

}  // namespace

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
    __builtin_ia32_pause();
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
    futex(&state_, FUTEX_WAIT, state == kLocked ? kContended : state);
    state = state_.load(std::memory_order_acquire);
  }
}

void Lock::wake(int waiters) {
  futex(&state_, FUTEX_WAKE, waiters);
}

}  // namespace poolalloc::internal
