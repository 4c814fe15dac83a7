// The pool region: one contiguous range of address space, cut into spans of kSpanSize bytes,
// each serving one size class. Ownership of a pointer is one subtraction and one compare
// against the range's mapped part, and its span (so its class) one shift away; the metadata of
// the spans lives in mappings of its own, apart from the blocks.
//
// Nothing is reserved ahead of use: a reservation, even PROT_NONE and MAP_NORESERVE, counts
// against RLIMIT_AS (ulimit -v), which batch schedulers set. At start-up the region is given a
// place with room to grow, far below where the kernel puts mappings, and only its first step
// is mapped; it grows, with its metadata, one step after another at the end of what is mapped
// (pool_region.cpp). Adjacent mappings of equal protection merge, so the region stays one VMA.
//
// This module alone turns a pointer into its span, its class and its block boundary.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "poolalloc/detail/lazy_block_list.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {

inline constexpr unsigned kSpanShift = 17;
inline constexpr std::size_t kSpanSize = std::size_t{1} << kSpanShift;  // 128 KiB

// Metadata of one span. `blocks` is the paper's pool carving the span's blocks lazily.
struct Span {
  detail::LazyBlockList blocks;
  Span* next = nullptr;  // in its class's list of spans with free blocks, or the unused list
  Span* prev = nullptr;
  // Blocks came back to its free list since purge_free_blocks last gave their pages away.
  bool unpurged = false;
  // Bytes from the span's start that its bump index has handed out: a block at or past this
  // offset was never handed out, so a free of it is a program's error that the fast path must
  // not take in (a cache would hand the block out, and the bump index again later). 0 while
  // the span serves no class. Written under the class lock as the bump index moves (and reset
  // by span carving), read without it through atomic_ref: a thread that frees a block it was
  // handed holds it through the synchronisation that followed its carving, so it never reads
  // an older value.
  std::uint32_t carved_end = 0;
};

struct PoolRegion {
  std::uintptr_t base = 0;  // fixed once placed; 0 and size 0 until then: nothing is ours
  // Bytes mapped from base on: [base, base + size) is ours. It only grows, under the span
  // carving lock, and is stored before any span of the new part is carved. A relaxed load is
  // enough: a block of the new part reaches another thread only through synchronisation (the
  // carving and class locks, or the program's own hand-over of the pointer), so that thread's
  // load happens after the store, and read-write coherence forbids it to see an older value.
  // As the size never shrinks, a later value is as good. A thread that loads a stale size
  // holds no pointer into the new part, so for every pointer it has the answer is the same.
  // On x86-64 and AArch64 the relaxed load is the plain load it was before.
  std::atomic<std::size_t> size{0};
  // Per span: its size class plus one, or 0 for a span that serves no class (so that the
  // freshly mapped, zero-filled table needs no initialisation and costs no memory). Both
  // tables are flat arrays over the region's whole capacity, mapped as far as it is.
  std::uint8_t* span_class_plus_one = nullptr;
  Span* spans = nullptr;
};

inline constinit PoolRegion g_region;

inline bool region_owns(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) - g_region.base <
         g_region.size.load(std::memory_order_relaxed);
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

inline std::atomic_ref<std::uint32_t> carved_end_of(Span& span) {
  return std::atomic_ref<std::uint32_t>(span.carved_end);
}
inline std::size_t span_index_of(const Span& span) {
  return static_cast<std::size_t>(&span - g_region.spans);
}
inline std::byte* span_start(const Span& span) {
  return reinterpret_cast<std::byte*>(g_region.base + (span_index_of(span) << kSpanShift));
}

// The class that the span holding p (a pointer that region_owns() accepted) serves, or
// kClassCount when it serves none; and p's offset in that span.
inline unsigned span_class_of(const void* p) {
  const unsigned span_byte = g_region.span_class_plus_one[span_index_of(p)];
  return span_byte == 0 ? kClassCount : span_byte - 1;
}
inline std::uint32_t offset_in_span(const void* p) {
  return static_cast<std::uint32_t>(region_offset(p) & (kSpanSize - 1));
}

// Span carving gives a span its class as it carves it, and kClassCount (none) once it is empty.
inline void set_span_class(const Span& span, unsigned cls) {
  g_region.span_class_plus_one[span_index_of(span)] =
      cls == kClassCount ? std::uint8_t{0} : static_cast<std::uint8_t>(cls + 1);
}

// The start of every whole block of a span, indexed like the span class bytes: entry cls + 1
// serves class cls, entry 0 (a span that serves no class) accepts the offset 0 alone. An offset
// in the span is a block start when offset * magic <= last (BlockDivider::product): one multiply
// and one compare reject interior and misaligned offsets and also the tail of the span, past
// its last whole block, where a block size that does not divide the span leaves a few bytes.
struct SpanBlockStarts {
  std::array<std::uint64_t, kClassCount + 1> magic;
  std::array<std::uint64_t, kClassCount + 1> last;  // the product of the last block's offset

  [[nodiscard]] bool is_block_start(unsigned span_byte, std::uint32_t offset_in_span) const {
    return offset_in_span * magic[span_byte] <= last[span_byte];
  }
};
inline constexpr SpanBlockStarts kSpanBlockStarts = [] {
  SpanBlockStarts starts{};
  starts.magic[0] = detail::BlockDivider(UINT32_MAX).magic();
  starts.last[0] = 0;
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const std::uint32_t size = class_size(cls);
    const detail::BlockDivider divider(size);
    const auto last_offset = static_cast<std::uint32_t>((kSpanSize / size - 1) * size);
    starts.magic[cls + 1] = divider.magic();
    starts.last[cls + 1] = divider.product(last_offset);
  }
  return starts;
}();

// The class of p, a pointer that region_owns() accepted, when p is the start of a block in a
// span that serves a class; kClassCount otherwise.
inline unsigned class_of_block(const void* p) {
  const std::uintptr_t offset = region_offset(p);
  const unsigned span_byte = g_region.span_class_plus_one[offset >> kSpanShift];
  const auto offset_in_span = static_cast<std::uint32_t>(offset & (kSpanSize - 1));
  if (span_byte == 0 || !kSpanBlockStarts.is_block_start(span_byte, offset_in_span)) [[unlikely]]
    return kClassCount;
  return span_byte - 1;
}

// Whether p, a pointer that region_owns() accepted, is a block that malloc handed out (what
// free and realloc may take back into a cache): a whole block of its span's class, below what
// the span's bump index reached. A span that serves no class has carved nothing, so it accepts
// no pointer. `cls` is the block's class when it is; the caller branches on `handed_out` alone,
// which keeps free's fast path one test shorter than a sentinel class would.
struct HandedOutBlock {
  unsigned cls;
  bool handed_out;
};
inline HandedOutBlock decode_handed_out_block(const void* p) {
  const std::uintptr_t offset = region_offset(p);
  const unsigned span_byte = g_region.span_class_plus_one[offset >> kSpanShift];
  const auto offset_in_span = static_cast<std::uint32_t>(offset & (kSpanSize - 1));
  const bool handed_out =
      kSpanBlockStarts.is_block_start(span_byte, offset_in_span) &&
      offset_in_span <
          carved_end_of(g_region.spans[offset >> kSpanShift]).load(std::memory_order_relaxed);
  return {span_byte - 1, handed_out};
}

// Gives the region its place, for at most `max_bytes` (rounded down to whole spans), and maps
// its first step. False if no place could be had: every request then goes to the system
// allocator.
bool place_region(std::size_t max_bytes);

// Spans the region may hold at most, and spans mapped so far.
std::size_t region_capacity_spans();
std::size_t region_mapped_spans();

// Maps the region, and its metadata, up to `spans` spans (more than are mapped, at most the
// capacity). False, with nothing changed, when the address space is exhausted (RLIMIT_AS) or
// the next range is taken by another mapping; a later call may succeed. errno is preserved.
// Only the holder of the span carving lock calls it.
bool grow_region(std::size_t spans);

}  // namespace poolalloc::internal
