#include "span_carving.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>

#include "lock.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {
namespace {

// Spans are made read-write this many at a time, so the region's committed part grows as one
// mapping while the rest stays PROT_NONE address space.
constexpr std::size_t kCommitStep = 16;

Lock g_carving_lock;
std::size_t g_span_count = 0;      // spans in the region
std::size_t g_fresh_span = 0;      // spans [0, g_fresh_span) have been carved at least once
std::size_t g_committed_span = 0;  // spans [0, g_committed_span) are read-write
Span* g_unused = nullptr;          // spans handed back to the OS, ready to be carved again
// Empty spans kept with their pages, so that a program that frees memory and allocates it
// again (every frame, every request) neither gives pages to the OS nor faults them back each
// time. The budget starts at 8 MiB over all classes and grows by one span each time a span
// whose pages went back to the OS is carved again (the program came back for memory it had
// freed), up to 64 MiB; malloc_trim resets it. Past it, RSS follows the live set; within it,
// the spans no carve took during a decay period go back to the OS (decay.hpp).
constexpr std::size_t kMinRetainedSpans = (std::size_t{8} << 20) >> kSpanShift;
constexpr std::size_t kMaxRetainedSpans = (std::size_t{64} << 20) >> kSpanShift;
std::size_t g_retained_budget = kMinRetainedSpans;
Span* g_retained = nullptr;
std::size_t g_retained_count = 0;
// The fewest retained spans since the last decay step: that many went unused for a period.
std::size_t g_retained_low_water = 0;
std::atomic<std::size_t> g_carved_spans{0};

void* map(std::size_t bytes, int protection) {
  void* p = mmap(nullptr, bytes, protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Reserves `size` bytes starting on a span boundary, so that blocks of a power-of-two class
// are aligned to their size: that is how the pools serve aligned requests.
std::uintptr_t reserve_aligned(std::size_t size) {
  auto* raw = static_cast<std::byte*>(map(size + kSpanSize, PROT_NONE));
  if (raw == nullptr) return 0;
  const auto start = (reinterpret_cast<std::uintptr_t>(raw) + kSpanSize - 1) & ~(kSpanSize - 1);
  const std::size_t head = start - reinterpret_cast<std::uintptr_t>(raw);
  if (head != 0) munmap(raw, head);
  if (head != kSpanSize) munmap(reinterpret_cast<std::byte*>(start) + size, kSpanSize - head);
  return start;
}

}  // namespace

bool reserve_region(std::size_t bytes) {
  // Where address space is limited (ulimit -v), settle for less.
  for (std::size_t size = bytes & ~(kSpanSize - 1); size >= 64 * kSpanSize; size /= 2) {
    const std::size_t span_count = size >> kSpanShift;
    const std::size_t metadata_bytes = span_count * (1 + sizeof(Span));
    auto* metadata = static_cast<std::uint8_t*>(map(metadata_bytes, PROT_READ | PROT_WRITE));
    if (metadata == nullptr) continue;
    const std::uintptr_t base = reserve_aligned(size);
    if (base == 0) {
      munmap(metadata, metadata_bytes);
      continue;
    }
    g_span_count = span_count;
    g_region.span_class_plus_one = metadata;
    g_region.spans = reinterpret_cast<Span*>(metadata + span_count);
    g_region.base = base;
    g_region.size = size;
    return true;
  }
  return false;
}

Span* carve_span(unsigned cls) {
  Span* span = nullptr;
  {
    LockGuard guard(g_carving_lock);
    if (g_retained != nullptr) {
      span = g_retained;
      g_retained = span->next;
      --g_retained_count;
      g_retained_low_water = std::min(g_retained_low_water, g_retained_count);
    } else if (g_unused != nullptr) {
      span = g_unused;
      g_unused = span->next;
      g_retained_budget = std::min(g_retained_budget + 1, kMaxRetainedSpans);
    } else {
      if (g_fresh_span == g_span_count) return nullptr;
      if (g_fresh_span == g_committed_span) {
        const std::size_t step = std::min(kCommitStep, g_span_count - g_committed_span);
        void* start = reinterpret_cast<void*>(g_region.base + (g_committed_span << kSpanShift));
        if (mprotect(start, step << kSpanShift, PROT_READ | PROT_WRITE) != 0) return nullptr;
        g_committed_span += step;
      }
      span = &g_region.spans[g_fresh_span++];
    }
  }
  const std::uint32_t block_size = class_size(cls);
  span->blocks = detail::LazyBlockList(span_start(*span), block_size, kSpanSize / block_size);
  span->next = span->prev = nullptr;
  span->unpurged = false;
  g_region.span_class_plus_one[span_index_of(*span)] = static_cast<std::uint8_t>(cls + 1);
  g_carved_spans.fetch_add(1, std::memory_order_relaxed);
  return span;
}

namespace {

void hand_back_to_os(Span& span) {
  madvise(span_start(span), kSpanSize, MADV_DONTNEED);
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
    g_retained_low_water = 0;
    g_retained_budget = kMinRetainedSpans;
  }
  while (retained != nullptr) {
    Span* next = retained->next;
    hand_back_to_os(*retained);
    retained = next;
  }
  return count << kSpanShift;
}

void release_block_pages(std::byte* block, std::size_t size) {
  const auto start =
      (reinterpret_cast<std::uintptr_t>(block) + sizeof(std::uint32_t) + kPageSize - 1) &
      ~(kPageSize - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(block) + size) & ~(kPageSize - 1);
  if (start < end) madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

void decay_retained_spans() {
  Span* unused = nullptr;
  {
    LockGuard guard(g_carving_lock);
    // The spans are alike (empty, committed): which ones go back does not matter, how many does.
    for (std::size_t n = std::min(g_retained_low_water, g_retained_count); n != 0; --n) {
      Span* span = g_retained;
      g_retained = span->next;
      --g_retained_count;
      span->next = unused;
      unused = span;
    }
    g_retained_low_water = g_retained_count;
  }
  while (unused != nullptr) {
    Span* next = unused->next;
    hand_back_to_os(*unused);
    unused = next;
  }
}

std::size_t carved_bytes() {
  return g_carved_spans.load(std::memory_order_relaxed) << kSpanShift;
}

std::size_t resident_bytes() {
  constexpr std::size_t kPage = 4096;
  std::size_t resident = 0;
  std::size_t fresh = 0;
  {
    LockGuard guard(g_carving_lock);
    fresh = g_fresh_span;
  }
  for (std::size_t span = 0; span < fresh; ++span) {
    if (g_region.span_class_plus_one[span] == 0) continue;
    unsigned char pages[kSpanSize / kPage];
    if (mincore(reinterpret_cast<void*>(g_region.base + (span << kSpanShift)), kSpanSize, pages) !=
        0)
      continue;
    for (unsigned char page : pages) resident += (page & 1) * kPage;
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
