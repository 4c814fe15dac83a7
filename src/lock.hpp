// A futex lock for the slow paths. It allocates nothing, so it can be used inside malloc, and
// it can be reset in the child of fork() whatever state the parent's threads left it in.
//
// Lock order. A thread holding a lock takes only locks later in this list, and the prepare
// handlers of fork() acquire them in this order:
//   -. before all: the tag registry lock (tag_registry.cpp); a registration takes no other lock
//      (it maps its tag's central stacks, no more), and no holder of another lock takes it; for
//      fork it is taken first, so that the registered tags, whose bins' locks (3) fork's
//      handlers take and release, stay as many until the fork is over
//   -. the tag CSV's line lock (tag_csv.cpp), held while a line reads the tags' figures (which
//      take 2 and 3, one at a time) and is written to its file; not taken for fork: a child of
//      fork() writes no lines
//   0. a thread cache's lock (thread_cache.cpp), which its owner takes first in its slow paths;
//      a thread that reclaims blocks from other threads' caches only tries it (try_lock) and
//      waits for no cache's lock, so that these locks form no cycle; not taken for fork
//   1. the reclaim lock (thread_cache.cpp): one thread reclaims from caches at a time
//   2. the thread cache registry lock (thread_cache.cpp), never held with 3 or 4
//   3. a bin's central list lock (central_lists.cpp), one bin at a time, in bin order
//   3a. a class's shared-span lock (shared_spans.cpp), taken only under a bin's lock (3), one at
//      a time; not taken for fork: the forking thread holds every bin's lock, so no thread holds
//      one of these then, and a child of fork() finds them free
//   4. the span carving lock (span_carving.cpp), taken under 3 when a class carves a span
//   5. the debug heap's lock (debug_heap.cpp), never held while calling into 0-4
//   6. the large-block cache's lock (large_blocks.cpp): nothing is taken or called under it
//   7. the tagged system blocks' lock (tagged_system_blocks.cpp): nothing is taken or called under
//      it but mmap and munmap
//   8. the heap profile's samples lock (heap_samples.cpp): nothing is taken or called under it
//      but os_map and os_unmap
//   9. the tag budgets' lock (tag_budgets.cpp): nothing is taken or called under it
// Critical sections call nothing outside the allocator but os.hpp's mmap and madvise, so a
// holder never waits for anything but a lock later in the order: the forking thread's wait for
// each lock is bounded.
//
// Held for fork: from the prepare handler to the parent or child handler, every lock is in
// the state kForkHeld. No thread may wait for a lock in that state (it might hold a libc lock
// that fork() itself needs next, or be the forking thread running another library's handler):
// lock_unless_forking() returns false instead and the caller falls back (system allocator,
// blocks kept in the thread cache, a lock-free list drained later). Plain lock() waits, and is
// used only where the caller holds no libc lock and is never the forking thread (an exiting
// thread's flush; poolalloc_tag_register and a thread's first poolalloc_tag_push, from any
// thread but the forking one: tag_registry.cpp).
#pragma once

#include <atomic>

namespace poolalloc::internal {

class Lock {
 public:
  void lock() {
    int expected = kFree;
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) [[unlikely]]
      lock_contended(/*give_up_when_forking=*/false);
  }
  // Takes the lock if it is free; false, without waiting, when it is not.
  [[nodiscard]] bool try_lock() {
    int expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire);
  }
  // Takes the lock unless it is held for fork(); false, without waiting, when it is.
  [[nodiscard]] bool lock_unless_forking() {
    int expected = kFree;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) [[likely]]
      return true;
    return lock_contended(/*give_up_when_forking=*/true);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) [[unlikely]]
      wake(1);
  }
  // True when held for fork(): its data then stays unchanged until the fork is over.
  [[nodiscard]] bool held_for_fork() const {
    return state_.load(std::memory_order_acquire) == kForkHeld;
  }
  // The prepare handler: takes the lock (waiting for its holder to leave its critical section),
  // marks it held for fork and wakes every waiter, so that those which can fall back do.
  void lock_for_fork() {
    lock();
    state_.store(kForkHeld, std::memory_order_release);
    wake(kWakeAll);
  }
  // After fork(): the parent releases it and wakes every waiter; the child, where no other
  // thread exists to hold it, resets it whatever state the parent's threads left it in.
  void unlock_after_fork(bool in_child) {
    if (in_child) {
      state_.store(kFree, std::memory_order_relaxed);
    } else {
      state_.store(kFree, std::memory_order_release);
      wake(kWakeAll);
    }
  }

 private:
  static constexpr int kFree = 0, kLocked = 1, kContended = 2, kForkHeld = 3;
  static constexpr int kWakeAll = 0x7fffffff;
  bool lock_contended(bool give_up_when_forking);
  void wake(int waiters);
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

// Holds the lock unless it was held for fork(); test locked() before touching what it guards.
// `wait_for_fork`: waits for the fork to end instead, where the caller may (see above).
class TryLockGuard {
 public:
  explicit TryLockGuard(Lock& lock, bool wait_for_fork = false)
      : lock_(lock),
        locked_(lock.lock_unless_forking() || (wait_for_fork && (lock.lock(), true))) {}
  ~TryLockGuard() {
    if (locked_) lock_.unlock();
  }
  [[nodiscard]] bool locked() const { return locked_; }
  TryLockGuard(const TryLockGuard&) = delete;
  TryLockGuard& operator=(const TryLockGuard&) = delete;

 private:
  Lock& lock_;
  bool locked_;
};

}  // namespace poolalloc::internal
