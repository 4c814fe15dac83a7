// Tracked<Arena>: budget and peak tracking around any toolkit allocator (FixedPool, Pool<T>,
// FrameAllocator, DoubleBufferedFrameAllocator, StackAllocator, PoolResource).
//
// Allocate through the tracker (allocate(), deallocate(), spawn() and despawn() are forwarded), or
// free on the arena. The tracker samples the arena's bytes in use after every call made through
// it, keeps the peak overall and per frame, and counts (and calls the over-budget callback) each
// time usage rises above the budget. A tracker can carry a name (set_name); print_budgets()
// prints a table of every live one.
//
//   Tracked tracked(frame, 64 * 1024, [](std::size_t used, std::size_t budget) { log(...); });
//   ... tracked.allocate(n) ...
//   log_peak(tracked.end_frame());
//   frame.reset();
#pragma once

#include <cstddef>
#include <iomanip>
#include <ostream>
#include <utility>

#include "detail/budget_registry.hpp"
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
class Tracked final : public detail::BudgetRow {
 public:
  Tracked(Arena& arena, std::size_t budget_bytes, OverBudget on_over_budget = {})
      : BudgetRow(budget_bytes, std::move(on_over_budget)), arena_(arena) {
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
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.despawn(std::forward<Args>(args)...); }
  void despawn(Args&&... args) {
    arena_.despawn(std::forward<Args>(args)...);
    sample();
  }

  // The largest usage seen during this frame (at its calls and now); the next frame starts.
  std::size_t end_frame() {
    sample();
    return take_frame_peak();
  }

  // The arena's bytes in use now; print_budgets() shows them as of the last sample.
  [[nodiscard]] std::size_t used() const { return detail::bytes_in_use(arena_); }
  [[nodiscard]] Arena& arena() const { return arena_; }

 private:
  void sample() {
    const std::size_t used_now = used();
    if (record(used_now)) over_budget(used_now);
  }

  Arena& arena_;
};

// One line per live Tracked arena, oldest first: name, bytes used at its last sample, peak, budget,
// and how many times usage rose above the budget. The per-frame memory report of a debug overlay;
// safe while trackers on other threads come, go and sample. The name column fits the longest name
// a tracker keeps, so that every name leaves the columns aligned.
inline void print_budgets(std::ostream& out) {
  constexpr int name_width = static_cast<int>(detail::Name::kMaxLength) + 1;
  out << std::left << std::setw(name_width) << "arena" << std::right << std::setw(12) << "used"
      << std::setw(12) << "peak" << std::setw(12) << "budget" << std::setw(6) << "over"
      << "\n";
  detail::BudgetRow::for_each_row([&out](const detail::BudgetRow& row) {
    const std::size_t used = row.sampled_used();  // before the peak, which is then at least as high
    out << std::left << std::setw(name_width) << (row.name().empty() ? "(unnamed)" : row.name())
        << std::right << std::setw(12) << used << std::setw(12) << row.peak() << std::setw(12)
        << row.budget() << std::setw(6) << row.over_budget_count() << "\n";
  });
}

}  // namespace poolalloc
