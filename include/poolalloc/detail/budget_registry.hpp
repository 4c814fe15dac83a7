// What Tracked<Arena> keeps whatever the arena: the budget, the peaks, the over-budget count,
// the name, and its row in the list of live tracked arenas that print_budgets() walks. The list
// is intrusive (no allocation) and guarded by one mutex, so arenas tracked on several threads
// may come and go; their figures are read unsynchronised, as a debug overlay does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string_view>
#include <utility>

#include "name.hpp"

namespace poolalloc::detail {

class BudgetRow {
 public:
  using OverBudget = std::function<void(std::size_t used_bytes, std::size_t budget_bytes)>;

  BudgetRow(const BudgetRow&) = delete;
  BudgetRow& operator=(const BudgetRow&) = delete;

  [[nodiscard]] virtual std::size_t used() const = 0;

  // The largest usage seen during this frame (at its calls and now); the next frame starts.
  std::size_t end_frame() {
    sample();
    return std::exchange(frame_peak_, 0);
  }

  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }
  [[nodiscard]] std::size_t peak() const { return peak_; }
  [[nodiscard]] std::size_t budget() const { return budget_; }
  // How many times usage rose above the budget.
  [[nodiscard]] std::size_t over_budget_count() const { return over_budget_count_; }

  // Calls f(row) for every live row, oldest first, under the list's lock.
  template <class F>
  static void for_each_row(F&& f) {
    const std::lock_guard lock(list_mutex_);
    for (const BudgetRow* row = first_; row != nullptr; row = row->next_) f(*row);
  }

 protected:
  BudgetRow(std::size_t budget, OverBudget on_over_budget)
      : budget_(budget), on_over_budget_(std::move(on_over_budget)) {
    const std::lock_guard lock(list_mutex_);
    previous_ = last_;
    (last_ != nullptr ? last_->next_ : first_) = this;
    last_ = this;
  }
  virtual ~BudgetRow() {
    const std::lock_guard lock(list_mutex_);
    (previous_ != nullptr ? previous_->next_ : first_) = next_;
    (next_ != nullptr ? next_->previous_ : last_) = previous_;
  }

  // Samples used(): peaks, and the callback each time usage rises above the budget.
  void sample() {
    const std::size_t used_now = used();
    peak_ = std::max(peak_, used_now);
    frame_peak_ = std::max(frame_peak_, used_now);
    const bool rose_over = used_now > budget_ && last_used_ <= budget_;
    // Before the callback: one that allocates through this arena samples again, and must see
    // this rise as seen.
    last_used_ = used_now;
    if (rose_over) {
      ++over_budget_count_;
      if (on_over_budget_) on_over_budget_(used_now, budget_);
    }
  }

 private:
  static inline std::mutex list_mutex_;
  static inline BudgetRow* first_ = nullptr;
  static inline BudgetRow* last_ = nullptr;

  std::size_t budget_;
  OverBudget on_over_budget_;
  std::size_t last_used_ = 0;
  std::size_t peak_ = 0;
  std::size_t frame_peak_ = 0;
  std::size_t over_budget_count_ = 0;
  Name name_;
  BudgetRow* previous_ = nullptr;
  BudgetRow* next_ = nullptr;
};

}  // namespace poolalloc::detail
