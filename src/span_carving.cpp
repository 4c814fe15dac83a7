#include "span_carving.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "decay_requests.hpp"
#include "free_block_marks.hpp"
#include "intrusive_list.hpp"
#include "lock.hpp"
#include "os.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {
namespace {

// The region grows by this many spans at a time (2 MiB), or by one when a whole step cannot be
// had.
constexpr std::size_t kGrowthStep = 16;
// After a failed growth the pools leave requests to the system allocator for this many more
// carve requests before trying again (so that an exhausted address space costs one failed mmap
// per so many requests, not one per request): 16 at first, doubling after each failure up to
// 4096, back to none after a success.
constexpr std::uint32_t kMinGrowthBackoff = 16;
constexpr std::uint32_t kMaxGrowthBackoff = 4096;

Lock g_carving_lock;                  // fourth in the lock order (lock.hpp)
std::size_t g_fresh_span = 0;         // spans [0, g_fresh_span) have been carved at least once
std::uint32_t g_growth_backoff = 0;   // after the last failure (0: the last growth succeeded)
std::uint32_t g_growth_deferred = 0;  // carve requests left to refuse before trying again
Span* g_unused = nullptr;             // spans handed back to the OS, ready to be carved again
// Empty spans kept with their pages, so that a program that frees memory and allocates it
// again (every frame, every request) neither gives pages to the OS nor faults them back each
// time. The budget starts at 8 MiB over all classes and grows by one span each time a span
// whose pages went back to the OS is carved again (the program came back for memory it had
// freed), up to 64 MiB; malloc_trim resets it. Past it, RSS follows the live set; within it,
// the spans no carve took during a decay period go back to the OS (decay.hpp).
//
// While the decay thread runs, the budget does not bind the calls of the program: a free that
// empties a span never hands pages back itself (a madvise of 128 KiB, and the page faults of
// the malloc that carves the span again). Every empty span is retained, and the decay thread's
// steps hand back those that no carve took for a step interval. So a level change
// that frees 100 MiB and allocates as much again makes no system call and takes no page fault,
// and what it does not take again goes back within two thirds of a period.
constexpr std::size_t kMinRetainedSpans = (std::size_t{8} << 20) >> kSpanShift;
constexpr std::size_t kMaxRetainedSpans = (std::size_t{64} << 20) >> kSpanShift;
std::size_t g_retained_budget = kMinRetainedSpans;
// Doubly linked, the span released last first: a carve takes the first, decay the last ones
// (g_retained_oldest), which went unused longest. Decay once took the first too: the spans that
// carves took again and again went back to the OS and were faulted in again, while those that no
// carve took kept their pages (a game's four tags left 16 such spans, 100 KiB, at its exit).
Span* g_retained = nullptr;
Span* g_retained_oldest = nullptr;
std::size_t g_retained_count = 0;
// The fewest retained spans since the last decay step: that many went unused for a period.
std::size_t g_retained_low_water = 0;
// Of the retained spans, how many the last decay call found unused but kept (its `most_spans`):
// they go back at the next calls of hand_back_unused_spans.
std::size_t g_unused_kept = 0;
std::atomic<std::size_t> g_carved_spans{0};
// Empty spans released while the carving lock was held for fork(), linked through Span::next:
// pushed without the lock, filed by the next holder (retained, or handed back to the OS).
std::atomic<Span*> g_released_while_forking{nullptr};

// Maps more of the region so that span g_fresh_span exists; false when it cannot be had now.
// Called with the carving lock held.
bool grow_for_fresh_span() {
  const std::size_t capacity = region_capacity_spans();
  if (g_fresh_span == capacity) return false;
  if (g_growth_deferred != 0) {
    --g_growth_deferred;
    return false;
  }
  const std::size_t mapped = region_mapped_spans();
  const std::size_t step = std::min(mapped + kGrowthStep, capacity);
  if (grow_region(step) || (step != mapped + 1 && grow_region(mapped + 1))) {
    g_growth_backoff = 0;
    return true;
  }
  g_growth_backoff = std::clamp(g_growth_backoff * 2, kMinGrowthBackoff, kMaxGrowthBackoff);
  g_growth_deferred = g_growth_backoff;
  return false;
}

// Under the carving lock: files one released span (retained within the budget, or while the
// decay thread runs; else its pages go back to the OS, which the caller does once the lock is
// dropped).
void file_released_span(Span& span, Span*& to_hand_back) {
  if (g_retained_count < g_retained_budget || decay_runs_in_background()) {
    dlist_push(g_retained, span);
    if (g_retained_oldest == nullptr) g_retained_oldest = &span;
    ++g_retained_count;
    return;
  }
  list_push(to_hand_back, span);
}

// Under the carving lock: files the spans released while it was held for fork().
void file_spans_released_while_forking(Span*& to_hand_back) {
  if (g_released_while_forking.load(std::memory_order_relaxed) == nullptr) return;
  Span* spans = g_released_while_forking.exchange(nullptr, std::memory_order_acquire);
  while (Span* span = list_pop(spans)) file_released_span(*span, to_hand_back);
}

// Without the lock and without waiting: the span waits for the next holder of the lock.
void release_while_forking(Span& span) {
  Span* head = g_released_while_forking.load(std::memory_order_relaxed);
  do {
    span.next = head;
  } while (!g_released_while_forking.compare_exchange_weak(head, &span, std::memory_order_release,
                                                           std::memory_order_relaxed));
}

void hand_back_all_to_os(Span* spans);

}  // namespace

Span* carve_span(unsigned bin) {
  Span* span = nullptr;
  Span* to_hand_back = nullptr;
  {
    // Called under a class lock: the forking thread takes this lock after every class lock,
    // so it cannot be held for fork() here, and waiting for it is bounded.
    LockGuard guard(g_carving_lock);
    file_spans_released_while_forking(to_hand_back);
    if (g_retained != nullptr) {
      span = g_retained;
      dlist_unlink(g_retained, *span);
      if (g_retained == nullptr) g_retained_oldest = nullptr;
      --g_retained_count;
      g_retained_low_water = std::min(g_retained_low_water, g_retained_count);
      g_unused_kept = std::min(g_unused_kept, g_retained_count);
    } else if (to_hand_back != nullptr) {
      span = list_pop(to_hand_back);  // released, not yet handed back: carve it again as it is
    } else if (g_unused != nullptr) {
      span = list_pop(g_unused);
      span->handed_back = false;
      g_retained_budget = std::min(g_retained_budget + 1, kMaxRetainedSpans);
    } else if (g_fresh_span < region_mapped_spans() || grow_for_fresh_span()) {
      span = &span_at(g_fresh_span++);
    }
  }
  hand_back_all_to_os(to_hand_back);
  if (span == nullptr) return nullptr;
  const std::uint32_t block_size = bin_block_size(bin);
  span->blocks = SpanBlocks(block_size, kSpanSize);
  span->next = span->prev = nullptr;
  span->unpurged = false;
  carved_end_of(*span).store(0, std::memory_order_relaxed);
  set_span_bin(*span, bin);
  g_carved_spans.fetch_add(1, std::memory_order_relaxed);
  return span;
}

namespace {

// Under the carving lock: whether none of spans [first, end) serves a class or waits retained
// (their bitmaps are all zero then).
bool all_handed_back(std::size_t first, std::size_t end) {
  for (std::size_t i = first; i < end && i < g_fresh_span; ++i)
    if (!span_at(i).handed_back) return false;
  return true;
}

// Under the carving lock, for a span handed back: the pages of its bitmap that no other span
// needs go back to the OS (they come back zero-filled): its group's page of heads once all 32
// spans of the group were handed back, and each page of tails once the spans whose tails share
// it were (pool_region.hpp): a madvise of a page each, once every span that shares it went back.
void hand_back_bitmap_pages(const Span& span) {
  constexpr std::size_t kTailBytes = kBitmapTailWords * sizeof(std::uint64_t);
  const std::size_t index = span_index_of(span);
  const std::size_t first = index / kSpansPerBitmapGroup * kSpansPerBitmapGroup;
  auto* const group = reinterpret_cast<std::byte*>(bitmap_of(span_at(first)).head);
  if (all_handed_back(first, first + kSpansPerBitmapGroup)) os_decommit(group, kPageSize);
  const std::size_t tail = (index - first) * kTailBytes;
  for (std::size_t page = tail / kPageSize; page <= (tail + kTailBytes - 1) / kPageSize; ++page) {
    const std::size_t sharing_first = page * kPageSize / kTailBytes;
    const std::size_t sharing_end = ((page + 1) * kPageSize - 1) / kTailBytes + 1;
    if (all_handed_back(first + sharing_first, first + sharing_end))
      os_decommit(group + kPageSize + page * kPageSize, kPageSize);
  }
}

// Outside the lock (madvise is a system call); the spans then join the unused ones, or wait
// for the lock's next holder while it is held for fork() (they are filed again then: a
// second madvise costs nothing).
void hand_back_all_to_os(Span* spans) {
  while (Span* span = list_pop(spans)) {
    os_decommit(span_start(*span), kSpanSize);
    span->written_pages = 0;
    TryLockGuard guard(g_carving_lock);
    if (!guard.locked()) {
      release_while_forking(*span);
      continue;
    }
    span->handed_back = true;
    list_push(g_unused, *span);
    // Under the lock, so that no span that shares a page is carved again meanwhile.
    hand_back_bitmap_pages(*span);
  }
}

}  // namespace

void release_span(Span& span) {
  span.blocks.clear_bitmap(bitmap_of(span));
  set_span_bin(span, kBinCount);
  carved_end_of(span).store(0, std::memory_order_relaxed);
  g_carved_spans.fetch_sub(1, std::memory_order_relaxed);
  Span* to_hand_back = nullptr;
  {
    TryLockGuard guard(g_carving_lock);
    if (!guard.locked()) {
      release_while_forking(span);
      return;
    }
    file_spans_released_while_forking(to_hand_back);
    file_released_span(span, to_hand_back);
  }
  hand_back_all_to_os(to_hand_back);  // outside the lock: madvise is a system call
}

std::size_t release_retained_spans() {
  Span* retained = nullptr;
  {
    TryLockGuard guard(g_carving_lock);
    if (!guard.locked()) return 0;  // held for fork(): nothing to trim now
    file_spans_released_while_forking(retained);
    list_splice(retained, std::exchange(g_retained, nullptr));
    g_retained_oldest = nullptr;
    g_retained_count = 0;
    g_retained_low_water = 0;
    g_unused_kept = 0;
    g_retained_budget = kMinRetainedSpans;
  }
  std::size_t count = 0;
  for (Span* span = retained; span != nullptr; span = span->next) ++count;
  hand_back_all_to_os(retained);
  return count << kSpanShift;
}

void release_block_pages(std::byte* block, std::size_t size) {
  const auto start = (reinterpret_cast<std::uintptr_t>(block) + kFreeBlockHeader + kPageSize - 1) &
                     ~(kPageSize - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(block) + size) & ~(kPageSize - 1);
  if (start < end) os_decommit(reinterpret_cast<void*>(start), end - start);
}

namespace {

// Under the carving lock: takes the `count` retained spans released first off the list, for
// hand_back_all_to_os.
Span* take_retained(std::size_t count) {
  Span* taken = nullptr;
  for (; count != 0; --count) {
    Span* const span = g_retained_oldest;
    g_retained_oldest = span->prev;
    dlist_unlink(g_retained, *span);
    list_push(taken, *span);
    --g_retained_count;
  }
  return taken;
}

}  // namespace

bool decay_retained_spans(std::size_t most_spans) {
  Span* unused = nullptr;
  bool left = false;
  {
    TryLockGuard guard(g_carving_lock);
    if (!guard.locked()) return true;  // held for fork(): nothing decays now, maybe later
    // How many went unused for the period: the low-water mark. Which: those released first.
    const std::size_t unused_count = std::min(g_retained_low_water, g_retained_count);
    const std::size_t going = std::min(unused_count, most_spans);
    unused = take_retained(going);
    g_unused_kept = unused_count - going;
    g_retained_low_water = g_retained_count;
    left = g_retained_count != 0;
  }
  const bool handed_back = unused != nullptr;
  hand_back_all_to_os(unused);
  return handed_back || left;
}

void hand_back_unused_spans(std::size_t most_spans) {
  Span* unused = nullptr;
  {
    TryLockGuard guard(g_carving_lock);
    if (!guard.locked() || g_unused_kept == 0) return;
    const std::size_t going = std::min({g_unused_kept, g_retained_count, most_spans});
    unused = take_retained(going);
    g_unused_kept -= going;
    g_retained_low_water = std::min(g_retained_low_water, g_retained_count);
  }
  hand_back_all_to_os(unused);
}

std::size_t carved_bytes() {
  return g_carved_spans.load(std::memory_order_relaxed) << kSpanShift;
}

std::size_t resident_bytes() {
  std::size_t resident = 0;
  std::size_t fresh = 0;
  {
    TryLockGuard guard(g_carving_lock);  // held for fork(), it cannot change: read it as it is
    fresh = g_fresh_span;
  }
  // Every span carved so far: those of a class, and the empty ones, which are retained (their
  // pages still resident) or were handed back (resident no more).
  for (std::size_t span = 0; span < fresh; ++span) {
    resident += os_resident_bytes(span_start(span_at(span)), kSpanSize);
  }
  return resident;
}

std::size_t retained_bytes() {
  TryLockGuard guard(g_carving_lock);  // held for fork(), it cannot change: read it as it is
  return g_retained_count << kSpanShift;
}

void lock_span_carving_for_fork() {
  g_carving_lock.lock_for_fork();
}
void unlock_span_carving_after_fork(bool in_child) {
  g_carving_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
