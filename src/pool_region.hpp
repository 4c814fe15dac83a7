// The pool region: one range of address space reserved at start-up, cut into spans of
// kSpanSize bytes, each serving one size class. Ownership of a pointer is one subtraction and
// one compare against this range, and its span (so its class) one shift away; the metadata of
// the spans lives in its own mapping, apart from the blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "poolalloc/detail/lazy_block_list.hpp"

namespace poolalloc::internal {

inline constexpr unsigned kSpanShift = 17;
inline constexpr std::size_t kSpanSize = std::size_t{1} << kSpanShift;  // 128 KiB
inline constexpr std::size_t kPageSize = 4096;

// Metadata of one span. `blocks` is the paper's pool carving the span's blocks lazily.
struct Span {
  detail::LazyBlockList blocks;
  Span* next = nullptr;  // in its class's list of spans with free blocks, or the unused list
  Span* prev = nullptr;
  // Blocks came back to its free list since purge_free_blocks last gave their pages away.
  bool unpurged = false;
};

struct PoolRegion {
  std::uintptr_t base = 0;  // 0 and size 0 until reserved: then nothing is ours
  std::size_t size = 0;
  // Per span: its size class plus one, or 0 for a span that serves no class (so that the
  // freshly mapped, zero-filled table needs no initialisation and costs no memory).
  std::uint8_t* span_class_plus_one = nullptr;
  Span* spans = nullptr;
};

inline PoolRegion g_region;

inline bool region_owns(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) - g_region.base < g_region.size;
}
// Byte offset of p in the region; only for a pointer region_owns() accepted.
inline std::uintptr_t region_offset(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) - g_region.base;
}
inline std::size_t span_index_of(const void* p) {
  return region_offset(p) >> kSpanShift;
}
inline Span& span_of(const void* p) {
  return g_region.spans[span_index_of(p)];
}
inline std::size_t span_index_of(const Span& span) {
  return static_cast<std::size_t>(&span - g_region.spans);
}
inline std::byte* span_start(const Span& span) {
  return reinterpret_cast<std::byte*>(g_region.base + (span_index_of(span) << kSpanShift));
}

}  // namespace poolalloc::internal
