// How a test's threads wait for one another: on a mutex and a condition variable, never on
// std::atomic::wait, std::semaphore or std::barrier. The libstdc++ of mingw-w64 (GCC 12, without
// a futex) can lose those's wake-ups, which hung tests under wine.
#pragma once

#include <condition_variable>
#include <mutex>

namespace poolalloc_test {

// A value that threads set and wait for.
class Step {
 public:
  void set(int value) {
    {
      const std::lock_guard lock(mutex_);
      value_ = value;
    }
    changed_.notify_all();
  }
  void wait_for(int value) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return value_ == value; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int value_ = 0;
};

// Blocks each of `count` callers until all have arrived; then starts again.
class Rendezvous {
 public:
  explicit Rendezvous(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const unsigned round = round_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return round_ != round; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int count_;
  int arrived_ = 0;
  unsigned round_ = 0;
};

}  // namespace poolalloc_test
