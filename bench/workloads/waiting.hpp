// How a workload's thread waits for another: wl::wait and wl::notify_one on a std::atomic, and
// wl::Barrier. On Linux they are std::atomic's wait and notify_one and std::barrier. libstdc++ 12
// has no futex on Windows, and there std::atomic's wait (std::barrier's too) reads the value, then
// sleeps on a condition variable under a lock that notify does not take: a notify between the two
// is lost, and the waiter may sleep for good (larson's barrier hung so under wine, both threads
// waiting). The Windows builds read the value under a lock that the notify takes too.
#pragma once

#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace wl {

#ifdef _WIN32
namespace waiting {
// One for every atomic that a workload waits on: they are few, and a notify wakes them all.
inline std::mutex mutex;
inline std::condition_variable changed;
}  // namespace waiting

// Returns once `value` holds other than `old`.
template <typename T>
void wait(const std::atomic<T>& value, T old, std::memory_order order) {
  std::unique_lock lock(waiting::mutex);
  waiting::changed.wait(lock, [&] { return value.load(order) != old; });
}
// Wakes every waiting thread (each looks at its own atomic again), not only one of `value`'s.
template <typename T>
void notify_one(std::atomic<T>& /*value*/) {
  // A waiter that found the old value under the lock sleeps by the time the lock is free.
  { const std::lock_guard lock(waiting::mutex); }
  waiting::changed.notify_all();
}

// std::barrier's arrive_and_wait, for a fixed number of threads.
class Barrier {
 public:
  explicit Barrier(std::ptrdiff_t threads) : threads_(threads), left_(threads) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const std::uint64_t phase = phase_;
    if (--left_ == 0) {
      left_ = threads_;
      ++phase_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return phase_ != phase; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const std::ptrdiff_t threads_;
  std::ptrdiff_t left_;
  std::uint64_t phase_ = 0;
};
#else
template <typename T>
void wait(const std::atomic<T>& value, T old, std::memory_order order) {
  value.wait(old, order);
}
template <typename T>
void notify_one(std::atomic<T>& value) {
  value.notify_one();
}
using Barrier = std::barrier<>;
#endif

}  // namespace wl
