// The pool region: one contiguous range of address space, cut into spans of kSpanSize bytes,
// each serving one bin (a size class of a memory tag, bins.hpp). Ownership of a pointer is one
// subtraction and one compare against the range's mapped part, and its span (so its class) one
// shift away; the metadata of the spans lives in mappings of its own, apart from the blocks.
//
// Nothing is reserved ahead of use: a reservation, even PROT_NONE and MAP_NORESERVE, counts
// against RLIMIT_AS (ulimit -v), which batch schedulers set. At start-up the region is given a
// place with room to grow, far below where the kernel puts mappings, and only its first step
// is mapped; it grows, with its metadata, one step after another at the end of what is mapped
// (pool_region.cpp). Adjacent mappings of equal protection merge, so the region stays one VMA.
//
// This module alone turns a pointer into its span, its class and its block boundary.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bins.hpp"
#include "off_page_start.hpp"
#include "os.hpp"
#include "span_blocks.hpp"

namespace poolalloc::internal {

inline constexpr unsigned kSpanShift = 17;
inline constexpr std::size_t kSpanSize = std::size_t{1} << kSpanShift;  // 128 KiB

// Metadata of one span, one cache line (64 bytes, so that a span's index finds its record with a
// shift). `blocks` carves the span's blocks; its bitmap of free ones is the span's in
// PoolRegion::bitmaps.
struct alignas(64) Span {
  SpanBlocks blocks;
  Span* next = nullptr;  // in its class's list of spans with free blocks, or the unused list
  Span* prev = nullptr;
  // Blocks came back to its bitmap since purge_free_blocks last gave their pages away.
  bool unpurged = false;
  // Its pages went back to the OS (span carving), and it serves no class.
  bool handed_back = false;
  // The bin the span serves (its size class and its tag, bins.hpp) plus one; 0 while it serves
  // none (the freshly mapped, zero-filled records need no initialisation). Written by span
  // carving; read without a lock by free, under the same argument as carved_end below.
  std::uint16_t bin_plus_one = 0;
  // Bytes from the span's start that its bump index has handed out: a block at or past this
  // offset was never handed out, so a free of it is a program's error that the fast path must
  // not take in (a cache would hand the block out, and the bump index again later). 0 while
  // the span serves no class. Written under the class lock as the bump index moves (and reset
  // by span carving), read without it through atomic_ref: a thread that frees a block it was
  // handed holds it through the synchronisation that followed its carving, so it never reads
  // an older value.
  std::uint32_t carved_end = 0;
  // Bit i: poolalloc wrote into page i of the span (a block's free mark) since its pages last
  // went back to the OS, so the page is resident; cleared as pages go back (span carving's hand
  // back, purge_free_blocks). Carving a never-used block whose mark falls in such a page faults
  // in nothing (central_lists.cpp).
  std::uint32_t written_pages = 0;
  // Of a shared span (below), its slot in g_run_tags plus one; 0 for a span of one bin. Written
  // under its class's shared-span lock before any of its blocks is handed out, read without it
  // under the same argument as carved_end.
  std::uint8_t shared_slot = 0;
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
  // Per span, its record and its bitmap of free blocks (SpanBlocks): flat arrays over the
  // region's whole capacity, mapped as far as the region is. The bitmaps, kBitmapWords words a
  // span, are laid out by groups of spans (kSpansPerBitmapGroup, below).
  Span* spans = nullptr;
  std::uint64_t* bitmaps = nullptr;
};

// The bitmaps of 32 spans in a row take 32 KiB: the first page holds their heads side by side,
// 128 bytes each, and the seven after it their tails (SpanBitmap). A page is touched once a
// block comes back to a span that reaches it, so the spans of blocks of 128 bytes or more, whose
// bitmaps are heads alone, share a page of bitmaps 32 at a time, where a bitmap of 1 KiB shared
// it 4 at a time: each tag's spans of the classes it uses little made a page of bitmaps for
// about four of them (a game's four tags, 32 KiB).
inline constexpr std::size_t kSpansPerBitmapGroup =
    kPageSize / (SpanBitmap::kHeadWords * sizeof(std::uint64_t));
inline constexpr std::size_t kBitmapTailWords = SpanBlocks::kBitmapWords - SpanBitmap::kHeadWords;
inline constexpr std::size_t kBitmapGroupWords = kSpansPerBitmapGroup * SpanBlocks::kBitmapWords;
static_assert(kSpansPerBitmapGroup * kBitmapTailWords * sizeof(std::uint64_t) % kPageSize == 0,
              "the tails of a group fill whole pages");
static_assert(sizeof(Span) == 64, "free reads one cache line of a span's record");

// Shared spans (shared_spans.hpp): a span of one size class whose blocks go out by runs, each
// run to a bin of one tag, so that the bins of many tags that use the class little share its
// pages. Its record's bin is the class's untagged one, which tells its class (and its carved end
// stays 0, which sends free past its fast path); the tag of each of its runs is a byte in the
// run tags of its slot, 0 while the run is not handed out. 64 slots of 256 runs: 16 KiB, of
// which a program touches the slots its shared spans took, 16 to a page.
inline constexpr std::uint32_t kRunsPerSharedSpan = 256;
inline constexpr std::size_t kSharedSpanSlots = 64;
inline constinit std::uint8_t g_run_tags[kSharedSpanSlots][kRunsPerSharedSpan] = {};
// The blocks of a run of a shared span of blocks of `block_size` bytes: the fewest that leave
// at most kRunsPerSharedSpan runs, 512 bytes of blocks or one block above that.
constexpr std::uint32_t run_blocks(std::uint32_t block_size) {
  const std::uint32_t blocks = static_cast<std::uint32_t>(kSpanSize) / block_size;
  return (blocks + kRunsPerSharedSpan - 1) / kRunsPerSharedSpan;
}
static_assert(kSpanSize / 4096 <= 32, "Span::written_pages has a bit per page");

inline constinit OffPageStart<PoolRegion> g_region_off_page_start;
inline constinit PoolRegion& g_region = g_region_off_page_start.value;

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
// The record of the span `index` spans from the region's base.
inline Span& span_at(std::size_t index) {
  return g_region.spans[index];
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
inline SpanBitmap bitmap_of(const Span& span) {
  const std::size_t index = span_index_of(span);
  const std::size_t in_group = index % kSpansPerBitmapGroup;
  std::uint64_t* const group = g_region.bitmaps + index / kSpansPerBitmapGroup * kBitmapGroupWords;
  return {group + in_group * SpanBitmap::kHeadWords,
          group + kSpansPerBitmapGroup * SpanBitmap::kHeadWords + in_group * kBitmapTailWords};
}
inline std::byte* block_at(const Span& span, std::uint32_t index) {
  return span_start(span) + std::size_t{index} * span.blocks.block_size();
}

// The bin that the span holding p (a pointer that region_owns() accepted) serves, or kBinCount
// when it serves none; its class, or kClassCount; and p's offset in that span.
inline unsigned span_bin_of(const void* p) {
  const unsigned bin_plus_one = span_of(p).bin_plus_one;
  return bin_plus_one == 0 ? kBinCount : bin_plus_one - 1;
}
inline unsigned span_class_of(const void* p) {
  const unsigned bin = span_bin_of(p);
  return bin == kBinCount ? kClassCount : bin_class(bin);
}
inline std::uint32_t offset_in_span(const void* p) {
  return static_cast<std::uint32_t>(region_offset(p) & (kSpanSize - 1));
}

// The index in its span of p, a block of a span that serves a bin.
inline std::uint32_t block_index_of(const Span& span, const void* p) {
  return span.blocks.index_of(offset_in_span(p));
}

// Span carving gives a span its bin as it carves it, and kBinCount (none) once it is empty.
inline void set_span_bin(Span& span, unsigned bin) {
  span.bin_plus_one = bin == kBinCount ? std::uint16_t{0} : static_cast<std::uint16_t>(bin + 1);
}

// The bin of the block `index` of a shared span: its run's tag's bin of the span's class, or
// kBinCount while its run is not handed out.
inline unsigned shared_block_bin(const Span& span, std::uint32_t index) {
  const unsigned tag =
      g_run_tags[span.shared_slot - 1u][index / run_blocks(span.blocks.block_size())];
  return tag == 0 ? kBinCount : bin_of(tag, bin_class(span.bin_plus_one - 1u));
}

// The bin of p, a pointer that region_owns() accepted, when p is the start of a whole block in
// a span that serves a bin, or of a run of a shared span handed out to a bin; kBinCount
// otherwise. class_of_block: its class, or kClassCount.
inline unsigned bin_of_block(const void* p) {
  const Span& span = span_of(p);
  const std::uint32_t offset = offset_in_span(p);
  if (span.bin_plus_one == 0 || !span.blocks.contains(offset) ||
      !span.blocks.is_block_offset(offset)) [[unlikely]]
    return kBinCount;
  if (span.shared_slot != 0) return shared_block_bin(span, span.blocks.index_of(offset));
  return span.bin_plus_one - 1u;
}
inline unsigned class_of_block(const void* p) {
  const unsigned bin = bin_of_block(p);
  return bin == kBinCount ? kClassCount : bin_class(bin);
}

// Whether p, a pointer that region_owns() accepted, is a block that malloc handed out (what
// free and realloc may take back into a cache): a block start of its span, below what the
// span's bump index reached, which also rules out the tail past the last whole block. A span
// that serves no bin has carved nothing, so it accepts no pointer. All of it is read from the
// span's record, one cache line. `bin` is the block's bin (its class and tag) when it is; the
// caller branches on `handed_out` alone, which keeps free's fast path one test shorter than a
// sentinel bin would.
struct HandedOutBlock {
  unsigned bin;
  bool handed_out;
};
//
// A block of a shared span is never handed out by this answer (the span's carved end is 0):
// free's slow path asks bin_of_shared_block.
inline HandedOutBlock decode_handed_out_block(const void* p) {
  Span& span = span_of(p);
  const std::uint32_t offset = offset_in_span(p);
  const bool handed_out = offset < carved_end_of(span).load(std::memory_order_relaxed) &&
                          span.blocks.is_block_offset(offset);
  return {span.bin_plus_one - 1u, handed_out};
}

// The bin of p, a pointer that region_owns() accepted, when p is a block of a shared span that
// malloc handed out (of a run handed out to a bin); kBinCount otherwise.
inline unsigned bin_of_shared_block(const void* p) {
  return span_of(p).shared_slot == 0 ? kBinCount : bin_of_block(p);
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
