#include "pool_region.hpp"

#include <algorithm>
#include <cerrno>

#include "os.hpp"

namespace poolalloc::internal {
namespace {

constexpr std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

// The region's place is chosen at random in [2 TiB, 40 TiB), aligned to 1 GiB: far below the
// kernel's mappings, which it puts top-down under the stack (from 127 TiB on x86-64), below the
// legacy bottom-up layout's start (42.7 TiB, with `ulimit -s unlimited`), and above the brk
// heap of a non-PIE program. Each of a few tries has a place of its own. ThreadSanitizer keeps
// its shadow memory there and aborts on a mapping inside it, so its builds (the core tests) take
// a place in its low application range, [64 GiB, 512 GiB), instead. AddressSanitizer's shadow
// covers [2 TiB, 16 TiB): its builds take [17 TiB, 40 TiB), or a third of the tries would fail.
#if defined(__SANITIZE_THREAD__)
constexpr std::uintptr_t kPlaceLow = std::uintptr_t{64} << 30;
constexpr std::uintptr_t kPlaceHigh = std::uintptr_t{512} << 30;
#elif defined(__SANITIZE_ADDRESS__)
constexpr std::uintptr_t kPlaceLow = std::uintptr_t{17} << 40;
constexpr std::uintptr_t kPlaceHigh = std::uintptr_t{40} << 40;
#else
constexpr std::uintptr_t kPlaceLow = std::uintptr_t{2} << 40;
constexpr std::uintptr_t kPlaceHigh = std::uintptr_t{40} << 40;
#endif
constexpr std::uintptr_t kPlaceAlign = std::uintptr_t{1} << 30;
constexpr int kPlaceTries = 8;

// The region first maps, and then grows by, this many spans (2 MiB).
constexpr std::size_t kFirstStepSpans = 16;
// The span records, and their bitmaps, are mapped this many bytes at a time.
constexpr std::size_t kMetadataStep = std::size_t{64} << 10;
constexpr std::size_t kBitmapBytes = SpanBlocks::kBitmapWords * sizeof(std::uint64_t);
static_assert(kMetadataStep % (kSpansPerBitmapGroup * kBitmapBytes) == 0,
              "the bitmaps are mapped by whole groups (pool_region.hpp)");

// A range of address space mapped read-write from its start, [start, start + mapped), that may
// grow up to `capacity` bytes, one mapping placed right after the other.
struct GrowingRange {
  std::uintptr_t start = 0;
  std::size_t mapped = 0;
  std::size_t capacity = 0;

  // Maps up to `bytes` (rounded up to `step`, capped at the capacity); false if that failed.
  bool grow_to(std::size_t bytes, std::size_t step) {
    if (bytes <= mapped) return true;
    const std::size_t target = std::min(round_up(bytes, step), capacity);
    if (os_map_noreserve_at(start + mapped, target - mapped) == nullptr) return false;
    mapped = target;
    return true;
  }
  void unmap_all() {
    if (mapped != 0) os_unmap(reinterpret_cast<void*>(start), mapped);
    mapped = 0;
  }
};

// The three parts of the region, in this order in one window of address space: the span
// records, their bitmaps, and the blocks from g_region.base on.
GrowingRange g_span_records;
GrowingRange g_bitmaps;
GrowingRange g_blocks;
std::size_t g_capacity_spans = 0;

struct Layout {
  std::size_t span_records;
  std::size_t bitmaps;
  std::size_t metadata;  // both, rounded up to a span so that the blocks start on a span
  std::size_t window;
};
Layout layout_of(std::size_t spans) {
  Layout layout{};
  layout.span_records = round_up(spans * sizeof(Span), kPageSize);
  layout.bitmaps = round_up(spans * kBitmapBytes, kPageSize);
  layout.metadata = round_up(layout.span_records + layout.bitmaps, kSpanSize);
  layout.window = layout.metadata + (spans << kSpanShift);
  return layout;
}

// Lays the region out from `start` for `spans` spans and maps its first step; false, with
// nothing left mapped, if a part of it is taken.
bool place_at(std::uintptr_t start, std::size_t spans) {
  const Layout layout = layout_of(spans);
  if (!os_reserve(start, layout.window)) return false;
  g_span_records = {start, 0, layout.span_records};
  g_bitmaps = {start + layout.span_records, 0, layout.bitmaps};
  g_blocks = {start + layout.metadata, 0, spans << kSpanShift};
  g_capacity_spans = spans;
  if (grow_region(std::min(spans, kFirstStepSpans))) return true;
  g_span_records.unmap_all();
  g_bitmaps.unmap_all();
  g_blocks.unmap_all();
  os_unreserve(start, layout.window);
  return false;
}

// Try `attempt` of placing a window of `window` bytes, from random bits drawn once.
std::uintptr_t random_place(std::size_t window, std::uint64_t seed, int attempt) {
  if (window >= kPlaceHigh - kPlaceLow) return kPlaceLow + std::uintptr_t(attempt) * kPlaceAlign;
  const std::uint64_t random = mix_bits(seed + std::uint64_t(attempt) * 0x9e3779b97f4a7c15u);
  const std::uint64_t places = (kPlaceHigh - kPlaceLow - window) / kPlaceAlign + 1;
  return kPlaceLow + random % places * kPlaceAlign;
}

}  // namespace

bool place_region(std::size_t max_bytes) {
  const std::size_t spans = max_bytes >> kSpanShift;
  if (spans == 0) return false;
  const int saved_errno = errno;
  g_region.spans = nullptr;
  g_region.bitmaps = nullptr;
  bool placed = false;
  const std::uint64_t seed = os_random_bits();
  for (int attempt = 0; attempt < kPlaceTries && !placed; ++attempt)
    placed = place_at(random_place(layout_of(spans).window, seed, attempt), spans);
  if (!placed) {
    // The address space there is taken or does not exist (a smaller one than x86-64's): the
    // kernel places a region of one step, which will not grow.
    const std::size_t small = std::min(spans, kFirstStepSpans);
    const Layout layout = layout_of(small);
    auto* mapping = static_cast<std::byte*>(os_map_noreserve(layout.window + kSpanSize));
    if (mapping != nullptr) {
      // Aligned so that the blocks start on a span boundary; the slack stays mapped.
      const std::uintptr_t start =
          round_up(reinterpret_cast<std::uintptr_t>(mapping) + layout.metadata, kSpanSize) -
          layout.metadata;
      g_span_records = {start, layout.span_records, layout.span_records};
      g_bitmaps = {start + layout.span_records, layout.bitmaps, layout.bitmaps};
      g_blocks = {start + layout.metadata, small << kSpanShift, small << kSpanShift};
      g_capacity_spans = small;
      placed = true;
    }
  }
  if (placed) {
    g_region.spans = reinterpret_cast<Span*>(g_span_records.start);
    g_region.bitmaps = reinterpret_cast<std::uint64_t*>(g_bitmaps.start);
    g_region.base = g_blocks.start;
    g_region.size.store(g_blocks.mapped, std::memory_order_relaxed);
  }
  errno = saved_errno;
  return placed;
}

std::size_t region_capacity_spans() {
  return g_capacity_spans;
}

std::size_t region_mapped_spans() {
  return g_blocks.mapped >> kSpanShift;
}

bool grow_region(std::size_t spans) {
  const int saved_errno = errno;
  // The metadata first: a span is published only with its record mapped.
  const bool grown = g_span_records.grow_to(spans * sizeof(Span), kMetadataStep) &&
                     g_bitmaps.grow_to(spans * kBitmapBytes, kMetadataStep) &&
                     g_blocks.grow_to(spans << kSpanShift, kSpanSize);
  // Before place_region() has set the base, the size stays 0: it publishes the first step.
  if (grown && g_region.base != 0) g_region.size.store(g_blocks.mapped, std::memory_order_relaxed);
  errno = saved_errno;
  return grown;
}

}  // namespace poolalloc::internal
