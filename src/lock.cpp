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
// on the futex, marking the lock contended so that unlock knows to wake someone.
void Lock::lock_contended() {
  for (int spin = 0; spin < 100; ++spin) {
    int expected = kFree;
    if (state_.load(std::memory_order_relaxed) == kFree &&
        state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire))
      return;
    __builtin_ia32_pause();
  }
  while (state_.exchange(kContended, std::memory_order_acquire) != kFree)
    futex(&state_, FUTEX_WAIT, kContended);
}

void Lock::wake_one() {
  futex(&state_, FUTEX_WAKE, 1);
}

}  // namespace poolalloc::internal
