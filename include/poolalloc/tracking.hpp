// Tracked<Arena>: budget and peak tracking around any toolkit allocator (FixedPool, Pool<T>,
// FrameAllocator, DoubleBufferedFrameAllocator, StackAllocator, PoolResource).
//
// Allocate through the tracker (allocate() and spawn() are forwarded); free on the arena or
// through the tracker, as usual. The tracker samples the arena's bytes in use after every call
// made through it, keeps the peak overall and per frame, and calls the over-budget callback each
// time usage rises above the budget.
//
//   Tracked tracked(frame, 64 * 1024, [](std::size_t used, std::size_t budget) { log(...); });
//   ... tracked.allocate(n) ...
//   log_peak(tracked.end_frame());
//   frame.reset();
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>

#include "fixed_pool.hpp"
#include "object_pool.hpp"

namespace poolalloc {

namespace detail {
template <class Arena>
requires requires(const Arena& arena) {
  arena.used();
}
std::size_t bytes_in_use(const Arena& arena) {
  return arena.used();
}
inline std::size_t bytes_in_use(const FixedPool& pool) {
  return pool.used_count() * pool.block_size();
}
template <class T>
std::size_t bytes_in_use(const Pool<T>& pool) {
  return pool.size() * sizeof(T);
}
}  // namespace detail

template <class Arena>
class Tracked {
 public:
  using OverBudget = std::function<void(std::size_t used_bytes, std::size_t budget_bytes)>;

  Tracked(Arena& arena, std::size_t budget_bytes, OverBudget on_over_budget = {})
      : arena_(arena), budget_(budget_bytes), on_over_budget_(std::move(on_over_budget)) {
    sample();
  }

  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.allocate(std::forward<Args>(args)...); }
  [[nodiscard]] auto* allocate(Args&&... args) {
    auto* result = arena_.allocate(std::forward<Args>(args)...);
    sample();
    return result;
  }
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.deallocate(std::forward<Args>(args)...); }
  void deallocate(Args&&... args) {
    arena_.deallocate(std::forward<Args>(args)...);
    sample();
  }
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.spawn(std::forward<Args>(args)...); }
  [[nodiscard]] auto* spawn(Args&&... args) {
    auto* result = arena_.spawn(std::forward<Args>(args)...);
    sample();
    return result;
  }

  // The largest usage seen during this frame (at its calls and now); the next frame starts.
  std::size_t end_frame() {
    sample();
    return std::exchange(frame_peak_, 0);
  }

  [[nodiscard]] std::size_t used() const { return detail::bytes_in_use(arena_); }
  [[nodiscard]] std::size_t peak() const { return peak_; }
  [[nodiscard]] std::size_t budget() const { return budget_; }
  [[nodiscard]] Arena& arena() const { return arena_; }

 private:
  void sample() {
    const std::size_t used_now = used();
    peak_ = std::max(peak_, used_now);
    frame_peak_ = std::max(frame_peak_, used_now);
    if (used_now > budget_ && last_used_ <= budget_ && on_over_budget_) {
      on_over_budget_(used_now, budget_);
    }
    last_used_ = used_now;
  }

  Arena& arena_;
  std::size_t budget_;
  OverBudget on_over_budget_;
  std::size_t last_used_ = 0;
  std::size_t peak_ = 0;
  std::size_t frame_peak_ = 0;
};

}  // namespace poolalloc
