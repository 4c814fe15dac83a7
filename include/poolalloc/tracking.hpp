// Tracked<Arena>: budget and peak tracking around any toolkit allocator (FixedPool, Pool<T>,
// FrameAllocator, DoubleBufferedFrameAllocator, StackAllocator, PoolResource, and any of them
// Synchronized: several threads may then share the tracker).
//
// Allocate through the tracker (allocate(), deallocate(), spawn() and despawn() are forwarded), or
// free on the arena. The tracker samples the arena's bytes in use before and after every call made
// through it, keeps the peak overall and per frame, and counts (and calls the over-budget callback)
// each time usage rises above the budget. A tracker can carry a name (set_name); print_budgets()
// prints a table of every live one. TrackedResource does the same for std::pmr containers.
//
// A tracker belongs to one thread, as its arena does; but print_budgets() may run on any thread,
// and a Tracked over a Synchronized arena may be shared by threads.
//
//   Tracked tracked(frame, 64 * 1024, [](std::size_t used, std::size_t budget) { log(...); });
//   ... tracked.allocate(n) ...
//   log_peak(tracked.end_frame());
//   frame.reset();
#pragma once

#include <cstddef>
#include <iomanip>
#include <ios>
#include <memory_resource>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "detail/budget_registry.hpp"
#include "detail/forward.hpp"
#include "detail/malloc_tags.hpp"
#include "detail/message.hpp"
#include "detail/printing.hpp"
#include "detail/resource_of.hpp"
#include "fixed_pool.hpp"
#include "object_pool.hpp"
#include "synchronized.hpp"

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
template <class Arena>
std::size_t bytes_in_use(const Synchronized<Arena>& arena) {
  return arena.with_lock([](const Arena& inner) { return bytes_in_use(inner); });
}

// `Tracked "bullets" (budget 65536 B): 0 B used, peak 8 B, over budget 0 times`: the figures as of
// the last sample, as print_budgets() shows them. The name is copied under the lock set_name()
// takes: a tracker shared by threads may be renamed by one while another prints it.
inline std::ostream& write_budget(std::ostream& out, std::string_view kind, const BudgetRow& row,
                                  const void* self) {
  const Name name = row.name_copy();
  const BudgetRow::Shown shown = row.shown();
  const std::size_t over = row.over_budget_count();
  return write_title(out, kind, name.view(), self)
         << " (budget " << row.budget() << " B): " << shown.used << " B used, peak " << shown.peak
         << " B, over budget " << over << (over == 1 ? " time" : " times");
}

// Runs f(arena); over a Synchronized arena, f(its arena) under its lock. Returns what f returns.
template <class Arena, class F>
decltype(auto) with_arena(Arena& arena, F&& f) {
  return std::forward<F>(f)(arena);
}
template <class Arena, class F>
decltype(auto) with_arena(Synchronized<Arena>& arena, F&& f) {
  return arena.with_lock(std::forward<F>(f));
}

// f(arena) and true; over a Synchronized arena, f(its arena) under its lock if no other thread
// holds it now, else false.
template <class Arena, class F>
bool try_with_arena(const Arena& arena, F&& f) {
  std::forward<F>(f)(arena);
  return true;
}
template <class Arena, class F>
bool try_with_arena(const Synchronized<Arena>& arena, F&& f) {
  return arena.try_with_lock(std::forward<F>(f));
}

// A name as print_budgets() prints it: its control characters as '?', as the malloc's statistics
// table prints them.
inline std::string shown_name(std::string_view name) {
  std::string shown(name);
  for (char& c : shown) c = shown_character(c);
  return shown;
}
}  // namespace detail

// Over a std::pmr::memory_resource (a PoolResource), it is a memory_resource too: pmr containers
// given the tracker allocate through it, each call sampled.
template <class Arena>
class Tracked final : public detail::ResourceBase<Arena, Tracked<Arena>>, public detail::BudgetRow {
 public:
  Tracked(Arena& arena, std::size_t budget_bytes, OverBudget on_over_budget = {})
      : BudgetRow(budget_bytes, std::move(on_over_budget)), arena_(&arena) {
    sample();
    set_sampler(&sample_row);
  }
  // The tracker moved into takes the arena, the budget, the callback, the name and the figures,
  // with a row of its own in print_budgets(); the one moved from tracks no arena and leaves the
  // table: it may only be destroyed. Not while a call through the tracker runs (from its callback
  // or from an object's constructor or destructor), which would go on in the one moved from.
  Tracked(Tracked&& other) noexcept
      : detail::ResourceBase<Arena, Tracked<Arena>>(other),
        BudgetRow(std::move(other)),
        arena_(std::exchange(other.arena_, nullptr)) {
    // Only the BudgetRow part of `other` was moved from: it must no longer sample `other`.
    other.set_sampler(nullptr);  // NOLINT(bugprone-use-after-move)
    set_sampler(&sample_row);
  }
  Tracked& operator=(Tracked&&) = delete;
  // Virtual only where the tracker is a memory_resource (a Tracked of a resource): no override.
  ~Tracked() { set_sampler(nullptr); }  // NOLINT(modernize-use-override)

  // The arena's interface where the arena has it (detail/forward.hpp). The calls that change what
  // it holds are sampled as allocate is: allocate, deallocate, spawn, spawn_at, despawn,
  // new_object, new_array, clear, reset, swap_buffers, free_to_marker, create, destroy, release,
  // grow. The others go straight to the arena (under its lock, over a Synchronized one): get,
  // handle_of, for_each, each, begin and end (range-for over a tracked Pool<T>; what the loop
  // spawns or despawns is seen at the next sample), compact, shrink, marker, the queries. used()
  // and peak() are the tracker's (bytes).
  POOLALLOC_FORWARD([[nodiscard]], call_and_sample, allocate)
  POOLALLOC_FORWARD(, call_and_sample, deallocate)
  POOLALLOC_FORWARD([[nodiscard]], call_and_sample, spawn)
  POOLALLOC_FORWARD([[nodiscard]], call_and_sample, spawn_at)
  POOLALLOC_FORWARD(, call_and_sample, despawn)
  POOLALLOC_FORWARD_TYPED(call_and_sample, new_object)
  POOLALLOC_FORWARD_TYPED(call_and_sample, new_array)
  POOLALLOC_FORWARD(, call_and_sample, clear)
  POOLALLOC_FORWARD(, call_and_sample, reset)
  POOLALLOC_FORWARD(, call_and_sample, swap_buffers)
  POOLALLOC_FORWARD(, call_and_sample, free_to_marker)
  POOLALLOC_FORWARD(, call_and_sample, create)
  POOLALLOC_FORWARD(, call_and_sample, destroy)
  POOLALLOC_FORWARD(, call_and_sample, release)
  POOLALLOC_FORWARD(, call_and_sample, grow)
  POOLALLOC_FORWARD(, on_arena, compact)
  POOLALLOC_FORWARD(, on_arena, shrink)
  POOLALLOC_FORWARD(, on_arena, reserve)
  POOLALLOC_FORWARD(, on_arena, set_leak_report)
  POOLALLOC_FORWARD_QUERY(on_arena, get)
  POOLALLOC_FORWARD_QUERY(on_arena, handle_of)
  POOLALLOC_FORWARD_QUERY(on_arena, for_each)
  POOLALLOC_FORWARD_QUERY(on_arena, each)
  POOLALLOC_FORWARD_QUERY(on_arena, begin)
  POOLALLOC_FORWARD_QUERY(on_arena, end)
  POOLALLOC_FORWARD_QUERY(on_arena, leak_report)
  POOLALLOC_FORWARD_QUERY(on_arena, size)
  POOLALLOC_FORWARD_QUERY(on_arena, capacity)
  POOLALLOC_FORWARD_QUERY(on_arena, chunk_count)
  POOLALLOC_FORWARD_QUERY(on_arena, debug_checks)
  POOLALLOC_FORWARD_QUERY(on_arena, reserved)
  POOLALLOC_FORWARD_QUERY(on_arena, used_count)
  POOLALLOC_FORWARD_QUERY(on_arena, free_count)
  POOLALLOC_FORWARD_QUERY(on_arena, peak_used)
  POOLALLOC_FORWARD_QUERY(on_arena, owns)
  POOLALLOC_FORWARD_QUERY(on_arena, verify)
  POOLALLOC_FORWARD_QUERY(on_arena, marker)
  POOLALLOC_FORWARD_QUERY(on_arena, block_size)
  POOLALLOC_FORWARD_QUERY(on_arena, alignment)
  POOLALLOC_FORWARD_QUERY(on_arena, largest_block)
  POOLALLOC_FORWARD_QUERY(on_arena, upstream)

  // Names the tracker and, where it has a name, the arena.
  void set_name(const char* name) {
    BudgetRow::set_name(name);
    if constexpr (requires { arena_->set_name(name); }) arena_->set_name(name);
  }

  // The largest usage seen during this frame (at its calls and now); the next frame starts.
  std::size_t end_frame() {
    sample();
    return detail::with_arena(*arena_, [&](auto&) { return take_frame_peak(); });
  }

  // Samples the arena now, as a call through the tracker would: catches up with what was
  // allocated or freed on the arena directly (a pmr container on a PoolResource, a spawn on the
  // pool), counting and calling back a rise above the budget.
  void sample() const {
    call_and_sample([](auto&) {});
  }

  // The figures, each after a sample: whatever path the memory took, the peak is never below the
  // usage, and a usage above the budget has been counted.
  [[nodiscard]] std::size_t used() const {
    sample();
    return sampled_used();
  }
  [[nodiscard]] std::size_t peak() const {
    sample();
    return BudgetRow::peak();
  }
  [[nodiscard]] std::size_t over_budget_count() const {
    sample();
    return BudgetRow::over_budget_count();
  }
  [[nodiscard]] Arena& arena() const { return *arena_; }

  // The tracker's figures, then the arena's line: `Tracked "bullets" (budget 65536 B): 0 B used,
  // peak 8 B, over budget 0 times; Pool "bullets" (object 8 B): ...`, in decimal whatever the
  // stream's base.
  friend std::ostream& operator<<(std::ostream& out, const Tracked& tracked) requires
      requires(std::ostream& stream, const Arena& arena) {
    stream << arena;
  }
  {
    tracked.sample();
    return detail::write_line(out, [&tracked](std::ostream& line) {
      detail::write_budget(line, "Tracked", tracked, &tracked) << "; " << *tracked.arena_;
    });
  }

 private:
  // Samples the usage, runs call(arena) and samples the usage it leaves, all under the lock of a
  // Synchronized arena: the samples of all threads follow their calls in order, and one thread at
  // a time writes the figures. The sample before catches up with what was freed on the arena
  // directly (a frame reset after end_frame(), a despawn on the pool), so that the call's rise
  // above the budget is judged against the usage it started from and counted. At most one of the
  // two samples rises: the second only from at most the budget. The callback runs after, outside
  // that lock, free to use the tracker. Returns what call returns.
  template <class Call>
  decltype(auto) call_and_sample(Call&& call) const {
    using Result = decltype(detail::with_arena(*arena_, call));
    std::size_t rose_to = 0;  // the usage that rose above the budget, which is never 0
    const auto sampled = [&](auto& arena) -> Result {
      record_usage(arena, rose_to);
      if constexpr (std::is_void_v<Result>) {
        call(arena);
        record_usage(arena, rose_to);
      } else {
        Result result = call(arena);
        record_usage(arena, rose_to);
        return result;
      }
    };
    if constexpr (std::is_void_v<Result>) {
      detail::with_arena(*arena_, sampled);
      if (rose_to != 0) over_budget(rose_to);
    } else {
      Result result = detail::with_arena(*arena_, sampled);
      if (rose_to != 0) over_budget(rose_to);
      return result;
    }
  }

  // The calls that change nothing the tracker counts, straight to the arena.
  template <class Call>
  decltype(auto) on_arena(Call&& call) {
    return std::forward<Call>(call)(*arena_);
  }
  template <class Call>
  decltype(auto) on_arena(Call&& call) const {
    return std::forward<Call>(call)(std::as_const(*arena_));
  }

  // The sample of a sweep (print_budgets(), sample_budgets() on the owner's thread): sample()'s,
  // but a Synchronized arena whose lock another thread holds keeps its last sample, so that a
  // sweep never waits for an arena's lock. A thread may destroy a tracker that threads share
  // while it holds the arena's lock, and that destruction waits for a sample in progress
  // (BudgetRow::set_sampler): a sample waiting for that lock would wait forever.
  static void sample_row(const BudgetRow& row) {
    const auto& tracked = static_cast<const Tracked&>(row);
    std::size_t rose_to = 0;
    detail::try_with_arena(*tracked.arena_,
                           [&](const auto& arena) { tracked.record_usage(arena, rose_to); });
    if (rose_to != 0) tracked.over_budget(rose_to);
  }

  // A sample of the arena's usage (the wrapped one, under its lock over a Synchronized arena);
  // `rose_to` becomes the usage where it rose above the budget.
  template <class Inner>
  void record_usage(const Inner& arena, std::size_t& rose_to) const {
    const std::size_t used = detail::bytes_in_use(arena);
    if (record(used)) rose_to = used;
  }

  Arena* arena_;  // null once moved from
};

// A std::pmr::memory_resource with a budget, so that pmr containers show in print_budgets(): it
// forwards to any upstream resource (a PoolResource, a FrameResource, new_delete_resource(), a
// monotonic_buffer_resource), counts the bytes requested through it and not yet deallocated, and
// samples that count after each call as Tracked does. Threads may share it (over an upstream that
// they may share: a SynchronizedPoolResource, new_delete_resource()): its count, peaks and
// over-budget count are atomics changed by read-modify-writes, each byte and each rise above the
// budget counted once; the callback runs on the thread whose call rose above the budget.
//
//   poolalloc::TrackedResource ui_budget(&pool_resource, 64 * 1024);
//   std::pmr::vector<Widget> widgets(&ui_budget);
class TrackedResource final : public std::pmr::memory_resource, public detail::BudgetRow {
 public:
  TrackedResource(std::pmr::memory_resource* upstream, std::size_t budget_bytes,
                  OverBudget on_over_budget = {})
      : BudgetRow(budget_bytes, std::move(on_over_budget)), upstream_(upstream) {}

  // The largest usage seen during this frame; the next frame starts.
  std::size_t end_frame() { return take_frame_peak(); }

  // Bytes requested through this resource and not yet deallocated: every change is sampled.
  [[nodiscard]] std::size_t used() const { return sampled_used(); }
  [[nodiscard]] std::pmr::memory_resource* upstream() const { return upstream_; }

  // `TrackedResource "ui" (budget 65536 B): 1200 B used, peak 4096 B, over budget 0 times`
  friend std::ostream& operator<<(std::ostream& out, const TrackedResource& tracked) {
    return detail::write_line(out, [&tracked](std::ostream& line) {
      detail::write_budget(line, "TrackedResource", tracked, &tracked);
    });
  }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    void* p = upstream_->allocate(bytes, alignment);
    if (const std::size_t rose_to = record_rise(bytes); rose_to != 0) over_budget(rose_to);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
    record_fall(bytes);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::pmr::memory_resource* upstream_;
};

// Samples the arena of every Tracked created on the calling thread, as its sample() does: what
// was allocated or freed on the arenas directly shows in their figures (and a rise above a budget
// is counted and called back, on this thread). The arenas of other threads' trackers are theirs
// to read: each thread samples its own (this, a call through the tracker, end_frame()). A
// Synchronized arena whose lock another thread holds now keeps its last sample: this never waits
// for a lock.
inline void sample_budgets() {
  detail::BudgetRow::sample_rows_of_this_thread();
}

// One line per live tracker (Tracked, TrackedResource), oldest first: name, bytes used, peak,
// budget, and how many times usage rose above the budget, after sample_budgets(): the figures of
// the calling thread's trackers are their arenas' at the moment it prints (but a Synchronized
// arena's whose lock another thread holds), those of other threads' trackers their last sample. The
// per-frame memory report of a debug overlay; safe while trackers on other threads come, go and
// sample. The name column fits the longest name a tracker keeps, so that every name leaves the
// columns aligned. In decimal padded with spaces, whatever the stream was left in; the stream is
// left as it was. In a program that runs on the drop-in malloc (linked or preloaded,
// detail/malloc_tags.hpp), a line per registered memory tag follows, "tag:" and its name: its live
// bytes, its peak, its budget
// ("-" when it has none) and how many times it went over it (poolalloc_tag_set_budget). A tag's
// name longer than the column pushes the figures of its line along. A name's control characters
// are shown as '?'.
inline void print_budgets(std::ostream& out) {
  detail::BudgetRow::sample_rows_of_this_thread();
  const detail::DecimalOutput decimal(out);
  constexpr int name_width = static_cast<int>(detail::Name::kMaxLength) + 1;
  // Every column after the name starts with a space, so that a figure wider than its column (a
  // budget of SIZE_MAX for "no limit") pushes the next along rather than running into it.
  out << std::left << std::setw(name_width) << "arena" << std::right << ' ' << std::setw(11)
      << "used" << ' ' << std::setw(11) << "peak" << ' ' << std::setw(11) << "budget" << ' '
      << std::setw(5) << "over"
      << "\n";
  detail::BudgetRow::for_each_row([&out](const detail::BudgetRow& row) {
    const detail::BudgetRow::Shown shown = row.shown();
    out << std::left << std::setw(name_width)
        << (row.name().empty() ? "(unnamed)" : detail::shown_name(row.name())) << std::right << ' '
        << std::setw(11) << shown.used << ' ' << std::setw(11) << shown.peak << ' ' << std::setw(11)
        << row.budget() << ' ' << std::setw(5) << row.over_budget_count() << "\n";
  });
  detail::for_each_malloc_tag([&out](const detail::MallocTagRow& tag) {
    out << std::left << std::setw(name_width) << detail::shown_name(std::string("tag:") + tag.name)
        << std::right << ' ' << std::setw(11) << tag.live_bytes << ' ' << std::setw(11)
        << tag.peak_bytes << ' ' << std::setw(11);
    if (tag.has_budget) {
      out << tag.budget_bytes;
    } else {
      out << '-';
    }
    out << ' ' << std::setw(5) << tag.over_budget << "\n";
  });
}

}  // namespace poolalloc
