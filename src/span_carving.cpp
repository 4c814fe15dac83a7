#include "span_carving.hpp"

#include <algorithm>
#include <atomic>

#include "lock.hpp"
#include "os_memory.hpp"
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

Lock g_carving_lock;
std::size_t g_fresh_span = 0;         // spans [0, g_fresh_span) have been carved at least once
std::uint32_t g_growth_backoff = 0;   // after the last failure (0: the last growth succeeded)
std::uint32_t g_growth_deferred = 0;  // carve requests left to refuse before trying again
Span* g_unused = nullptr;             // spans handed back to the OS, ready to be carved again
// Empty spans kept with their pages, so that a program that frees memory and allocates it
// again (every frame, every request) neither gives pages to the OS nor faults them back each
// time. The budget starts at 8 MiB over all classes and grows by one span each time a span
// whose pages went back to the OS is carved again (the program came back for memory it had
// freed), up to 64 MiB; malloc_trim resets it. Past it, RSS follows the live set.
constexpr std::size_t kMinRetainedSpans = (std::size_t{8} << 20) >> kSpanShift;
constexpr std::size_t kMaxRetainedSpans = (std::size_t{64} << 20) >> kSpanShift;
std::size_t g_retained_budget = kMinRetainedSpans;
Span* g_retained = nullptr;
std::size_t g_retained_count = 0;
std::atomic<std::size_t> g_carved_spans{0};

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

}  // namespace

Span* carve_span(unsigned cls) {
  Span* span = nullptr;
  {
    LockGuard guard(g_carving_lock);
    if (g_retained != nullptr) {
      span = g_retained;
      g_retained = span->next;
      --g_retained_count;
    } else if (g_unused != nullptr) {
      span = g_unused;
      g_unused = span->next;
      g_retained_budget = std::min(g_retained_budget + 1, kMaxRetainedSpans);
    } else {
      if (g_fresh_span == region_mapped_spans() && !grow_for_fresh_span()) return nullptr;
      span = &g_region.spans[g_fresh_span++];
    }
  }
  const std::uint32_t block_size = class_size(cls);
  span->blocks = detail::LazyBlockList(span_start(*span), block_size, kSpanSize / block_size);
  span->next = span->prev = nullptr;
  g_region.span_class_plus_one[span_index_of(*span)] = static_cast<std::uint8_t>(cls + 1);
  g_carved_spans.fetch_add(1, std::memory_order_relaxed);
  return span;
}

namespace {

void hand_back_to_os(Span& span) {
  release_pages(span_start(span), kSpanSize);
  LockGuard guard(g_carving_lock);
  span.next = g_unused;
  g_unused = &span;
}

}  // namespace

void release_span(Span& span) {
  g_region.span_class_plus_one[span_index_of(span)] = 0;
  g_carved_spans.fetch_sub(1, std::memory_order_relaxed);
  {
    LockGuard guard(g_carving_lock);
    if (g_retained_count < g_retained_budget) {
      span.next = g_retained;
      g_retained = &span;
      ++g_retained_count;
      return;
    }
  }
  hand_back_to_os(span);  // outside the lock: madvise is a system call
}

std::size_t release_retained_spans() {
  Span* retained = nullptr;
  std::size_t count = 0;
  {
    LockGuard guard(g_carving_lock);
    std::swap(retained, g_retained);
    std::swap(count, g_retained_count);
    g_retained_budget = kMinRetainedSpans;
  }
  while (retained != nullptr) {
    Span* next = retained->next;
    hand_back_to_os(*retained);
    retained = next;
  }
  return count << kSpanShift;
}

std::size_t carved_bytes() {
  return g_carved_spans.load(std::memory_order_relaxed) << kSpanShift;
}

std::size_t resident_bytes() {
  std::size_t resident = 0;
  std::size_t fresh = 0;
  {
    LockGuard guard(g_carving_lock);
    fresh = g_fresh_span;
  }
  for (std::size_t span = 0; span < fresh; ++span) {
    if (g_region.span_class_plus_one[span] == 0) continue;
    resident +=
        resident_bytes_of(reinterpret_cast<void*>(g_region.base + (span << kSpanShift)), kSpanSize);
  }
  return resident;
}

void lock_span_carving_for_fork() {
  g_carving_lock.lock();
}
void unlock_span_carving_after_fork(bool in_child) {
  g_carving_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
