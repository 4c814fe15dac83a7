// What every tracker keeps whatever it tracks: the budget, the figures of its samples (the usage
// at the last one, the peak, the peak of the frame, the over-budget count), the name, and its row
// in the list of live trackers that print_budgets() walks. The list is intrusive (no allocation)
// and guarded by one mutex, so that trackers on several threads may come and go while another
// thread prints.
//
// A row joins the list while its tracker is still being built and leaves it while its tracker is
// already being destroyed, so the printer reads only what the row keeps itself, never calling
// into the tracker: the name under the list's lock, the figures as atomics. A Tracked's figures
// are written by one thread at a time (the tracker's owner, or the thread holding the lock of the
// Synchronized arena it tracks), so loads and stores suffice, with no read-modify-write; a
// TrackedResource's, which threads may share, change by read-modify-writes (record_rise).
//
// A tracker whose arena can be read (a Tracked) gives its row a sampler once it is whole, and
// takes it back before its destruction begins. sample_rows_of_this_thread() calls the samplers of
// the rows created on the calling thread, whose arenas are that thread's to read, one at a time
// and outside the list's lock, so that a sample's over-budget callback may do anything a tracker's
// owner may (create, rename or destroy trackers, print them). A tracker that threads share may be
// destroyed by another thread meanwhile: its destruction waits for the sample to return.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "name.hpp"

namespace poolalloc::detail {

class BudgetRow {
 public:
  using OverBudget = std::function<void(std::size_t used_bytes, std::size_t budget_bytes)>;

  BudgetRow(const BudgetRow&) = delete;
  BudgetRow& operator=(const BudgetRow&) = delete;

  // Under the list's lock: a printer on another thread may be reading the name.
  void set_name(const char* name) {
    const std::lock_guard lock(list_mutex_);
    name_.set(name);
  }
  // The name as the tracker's owner, or a printer holding the list's lock, reads it.
  [[nodiscard]] std::string_view name() const { return name_.view(); }
  // A copy taken under the list's lock, for a thread that shares the tracker with one that may
  // rename it.
  [[nodiscard]] Name name_copy() const {
    const std::lock_guard lock(list_mutex_);
    return name_;
  }
  // The usage at the last sample, which print_budgets() shows. A printer that reads it first sees
  // a peak at least as high: the peak is stored before it.
  [[nodiscard]] std::size_t sampled_used() const {
    return sampled_used_.load(std::memory_order_acquire);
  }
  // Never below the usage: a tracker that threads share (TrackedResource) may count a rise before
  // it raises its peak.
  [[nodiscard]] std::size_t peak() const {
    return std::max(peak_.load(std::memory_order_relaxed), sampled_used());
  }
  // The usage and the peak for one printed line: the peak never below the usage shown, which a
  // TrackedResource's threads may raise (a rise counted before its peak) and lower again between
  // the two reads.
  struct Shown {
    std::size_t used;
    std::size_t peak;
  };
  [[nodiscard]] Shown shown() const {
    const std::size_t used = sampled_used();
    return {used, std::max(peak(), used)};
  }
  [[nodiscard]] std::size_t budget() const { return budget_; }
  // How many times usage rose above the budget.
  [[nodiscard]] std::size_t over_budget_count() const {
    return over_budget_count_.load(std::memory_order_relaxed);
  }

  // Calls f(row) for every live row, oldest first, under the list's lock.
  template <class F>
  static void for_each_row(F&& f) {
    const std::lock_guard lock(list_mutex_);
    for (const BudgetRow* row = first_; row != nullptr; row = row->next_) f(*row);
  }

  // Samples every row created on the calling thread that has a sampler, each once, oldest first.
  // The list's lock is held only to find the next one (O(rows) each, O(rows^2) in all: the rows
  // are a program's few dozen budgets), so that a row that a callback destroys is never reached.
  static void sample_rows_of_this_thread() {
    const std::thread::id me = std::this_thread::get_id();
    std::uint64_t sweep = 0;
    {
      const std::lock_guard lock(list_mutex_);
      sweep = ++sweeps_;
    }
    for (;;) {
      Sampling sampling{nullptr, me, nullptr};
      Sampler sampler = nullptr;
      {
        const std::lock_guard lock(list_mutex_);
        for (BudgetRow* row = first_; row != nullptr; row = row->next_) {
          if (row->sampler_ == nullptr || row->owner_ != me || row->swept_ == sweep) continue;
          row->swept_ = sweep;
          sampling = {row, me, samplings_};
          samplings_ = &sampling;
          sampler = row->sampler_;
          break;
        }
      }
      if (sampling.row == nullptr) return;
      sampler(*sampling.row);
      // The row may be gone now (the sample's callback may destroy its tracker): only the record
      // on this stack is touched.
      const std::lock_guard lock(list_mutex_);
      Sampling** link = &samplings_;
      while (*link != &sampling) link = &(*link)->next;
      *link = sampling.next;
      sampled_.notify_all();
    }
  }

 protected:
  BudgetRow(std::size_t budget, OverBudget on_over_budget)
      : budget_(budget), on_over_budget_(std::move(on_over_budget)) {
    join();
  }
  // A row of its own, last in the list, with the other's budget, callback, name and figures; the
  // other leaves the list (its tracker is moved from).
  BudgetRow(BudgetRow&& other) noexcept
      : budget_(other.budget_),
        on_over_budget_(std::move(other.on_over_budget_)),
        sampled_used_(other.sampled_used()),
        peak_(other.peak_.load(std::memory_order_relaxed)),
        over_budget_count_(other.over_budget_count()),
        frame_peak_(other.frame_peak_.load(std::memory_order_relaxed)) {
    const std::lock_guard lock(list_mutex_);
    name_ = other.name_;
    other.leave();
    join_locked();
  }
  ~BudgetRow() {
    const std::lock_guard lock(list_mutex_);
    leave();
  }

  // Records a sample: the peaks, and a rise above the budget, counted; returns whether it rose.
  // The caller then calls over_budget(), outside any lock it holds. Const: a tracker's queries
  // sample its arena first, so that its figures never contradict each other.
  bool record(std::size_t used_now) const {
    peak_.store(std::max(peak_.load(std::memory_order_relaxed), used_now),
                std::memory_order_relaxed);
    frame_peak_.store(std::max(frame_peak_.load(std::memory_order_relaxed), used_now),
                      std::memory_order_relaxed);
    const std::size_t used_before = sampled_used_.load(std::memory_order_relaxed);
    // Before the callback: one that allocates through the tracker samples again, and must see
    // this rise as seen.
    sampled_used_.store(used_now, std::memory_order_release);
    const bool rose_over = used_now > budget_ && used_before <= budget_;
    if (rose_over) over_budget_count_.store(over_budget_count() + 1, std::memory_order_relaxed);
    return rose_over;
  }
  // A rise or a fall of the usage by `bytes`, which threads that share the tracker may record at
  // once (TrackedResource): read-modify-writes count each byte once, and a rise above the budget
  // once, where the usage before the change was within it. Returns the usage that rose above the
  // budget, for over_budget(), or 0.
  std::size_t record_rise(std::size_t bytes) {
    const std::size_t before = sampled_used_.fetch_add(bytes, std::memory_order_acq_rel);
    const std::size_t now = before + bytes;
    raise(peak_, now);
    raise(frame_peak_, now);
    if (now <= budget_ || before > budget_) return 0;
    over_budget_count_.fetch_add(1, std::memory_order_relaxed);
    return now;
  }
  void record_fall(std::size_t bytes) { sampled_used_.fetch_sub(bytes, std::memory_order_acq_rel); }

  // noexcept: a callback that throws ends the program, rather than unwind through a tracker that
  // has counted a block its caller will never receive.
  void over_budget(std::size_t used_now) const noexcept {
    if (on_over_budget_) on_over_budget_(used_now, budget_);
  }
  // Reads the arena and records a sample (the tracker's sample()). A row without one keeps
  // figures that every change goes through (TrackedResource).
  using Sampler = void (*)(const BudgetRow& row);
  // Under the list's lock: the thread that sweeps may be reading it. Given by a tracker once it is
  // whole, and taken back (nullptr) before its destruction begins: then, where another thread is
  // sampling the row (its owner sweeping, while the thread that destroys a tracker that threads
  // share takes it back), this waits until that sample returns. The thread that samples the row
  // itself (its callback destroys the tracker) does not wait: the sweep touches the row no more.
  void set_sampler(Sampler sampler) {
    std::unique_lock lock(list_mutex_);
    sampler_ = sampler;
    if (sampler != nullptr) return;
    const std::thread::id me = std::this_thread::get_id();
    sampled_.wait(lock, [&] {
      for (const Sampling* sampling = samplings_; sampling != nullptr; sampling = sampling->next) {
        if (sampling->row == this && sampling->thread != me) return false;
      }
      return true;
    });
  }

  // The largest usage recorded since the last call, the usage now included; the next frame
  // starts.
  std::size_t take_frame_peak() {
    raise(frame_peak_, sampled_used());
    return frame_peak_.exchange(0, std::memory_order_relaxed);
  }

 private:
  void join() {
    const std::lock_guard lock(list_mutex_);
    join_locked();
  }
  void join_locked() {
    previous_ = last_;
    (last_ != nullptr ? last_->next_ : first_) = this;
    last_ = this;
    listed_ = true;
  }
  // Under the list's lock.
  void leave() {
    if (!listed_) return;
    (previous_ != nullptr ? previous_->next_ : first_) = next_;
    (next_ != nullptr ? next_->previous_ : last_) = previous_;
    previous_ = next_ = nullptr;
    listed_ = false;
  }

  static void raise(std::atomic<std::size_t>& figure, std::size_t to) {
    std::size_t now = figure.load(std::memory_order_relaxed);
    while (now < to && !figure.compare_exchange_weak(now, to, std::memory_order_relaxed)) {
    }
  }

  // A sample that a sweep is taking, outside the list's lock: a record on the sweeping thread's
  // stack, in a list under the list's lock, so that a tracker's destruction on another thread
  // waits for it (set_sampler).
  struct Sampling {
    const BudgetRow* row;
    std::thread::id thread;
    Sampling* next;
  };

  static inline std::mutex list_mutex_;
  static inline std::condition_variable sampled_;  // a Sampling left the list
  static inline Sampling* samplings_ = nullptr;
  static inline BudgetRow* first_ = nullptr;
  static inline BudgetRow* last_ = nullptr;
  static inline std::uint64_t sweeps_ = 0;  // sample_rows_of_this_thread() calls so far

  std::size_t budget_;
  OverBudget on_over_budget_;
  // The figures of the samples, which a tracker's queries take too (see record()).
  mutable std::atomic<std::size_t> sampled_used_{0};
  mutable std::atomic<std::size_t> peak_{0};
  mutable std::atomic<std::size_t> over_budget_count_{0};
  mutable std::atomic<std::size_t> frame_peak_{0};  // the printer never reads it
  Name name_;
  BudgetRow* previous_ = nullptr;
  BudgetRow* next_ = nullptr;
  bool listed_ = false;
  // Under the list's lock: the thread the tracker was created (or moved into) on, its sampler, and
  // the last sweep that sampled it.
  std::thread::id owner_ = std::this_thread::get_id();
  Sampler sampler_ = nullptr;
  std::uint64_t swept_ = 0;
};

}  // namespace poolalloc::detail
