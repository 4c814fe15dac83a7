// A futex lock for the slow paths. It allocates nothing, so it can be used inside malloc, and
// it can be reset in the child of fork() whatever state the parent's threads left it in.
#pragma once

#include <atomic>

namespace poolalloc::internal {

class Lock {
 public:
  void lock() {
    int expected = kFree;
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) [[unlikely]]
      lock_contended();
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) [[unlikely]]
      wake_one();
  }
  // After fork(): the parent unlocks; the child, where no other thread exists to hold it,
  // resets it whatever state the parent's threads left it in.
  void unlock_after_fork(bool in_child) {
    if (in_child) {
      state_.store(kFree, std::memory_order_relaxed);
    } else {
      unlock();
    }
  }

 private:
  static constexpr int kFree = 0, kLocked = 1, kContended = 2;
  void lock_contended();
  void wake_one();
  std::atomic<int> state_{kFree};
};

class LockGuard {
 public:
  explicit LockGuard(Lock& lock) : lock_(lock) { lock_.lock(); }
  ~LockGuard() { lock_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Lock& lock_;
};

}  // namespace poolalloc::internal
