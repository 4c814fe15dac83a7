// The fast path: allocation and free of a pooled block when the calling thread's cache can
// serve it. A table lookup, a handful of loads and stores to thread-local memory, no lock and
// no atomic; everything else is in the slow paths of thread_cache.cpp.
//
// What it costs, as exported (g++ 12 -O3, x86-64; objdump of libpoolalloc.so): malloc is 21
// instructions before its ret (size check 2, class lookup 4, bin address 3, pop 11 of which 3 are
// the second look at bottom that lets other threads reclaim the bin, clearing the mark 1); free
// is 37 (region check 6, span class and block-start check 10, the check that the block was ever
// handed out 5, bin address 5, push 11 with the double-free check). A malloc(64)/free pair in a
// loop measures 72 under callgrind, the loop's own included (scripts/fastpath-instructions.sh).
#pragma once

#include <array>
#include <cstdint>

#include "free_block_marks.hpp"
#include "misuse.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {

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

// A block of class `cls` from this thread's cache; nullptr when the bin is empty. Reads the
// bin and its top slot, never the block: clearing its mark is a store.
inline void* pop_cached(std::size_t cls) {
  CacheBin* const bin = &t_cache->bin_of_class(cls);
  void** const top = bin->top_slot();
  if (top <= bin->bottom_slot()) [[unlikely]]  // <=: another thread may have moved bottom up
    return nullptr;
  // Takes the block first, then looks at bottom again: a thread reclaiming blocks from this
  // bin may have moved it meanwhile (thread_cache.cpp, reclaim_caches, says why this order).
  bin->top.store(top - 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (top - 1 < bin->bottom_slot()) [[unlikely]] {
    bin->top.store(top, std::memory_order_relaxed);
    return nullptr;
  }
  bin->requests += 1;
  void* block = top[-1];
  clear_mark(block);
  return block;
}

// A block of class `cls`, or nullptr when the pools cannot serve it.
inline void* pool_allocate(unsigned cls) {
  if (void* block = pop_cached(cls)) [[likely]]
    return block;
  return refill_and_allocate(cls);
}

// Pushes the block on the bin; false when the bin is full or the block carries its free mark
// already (a double free, which the slow path reports).
inline bool push_cached(CacheBin& bin, void* block) {
  void** const top = bin.top_slot();
  if (top == bin.end) [[unlikely]]
    return false;
  const std::uintptr_t mark = mark_of(block);
  if (words_of(block)[1] == mark) [[unlikely]]
    return false;
  words_of(block)[1] = mark;
  *top = block;
  bin.top.store(top + 1, std::memory_order_release);  // the slot before the top that shows it
  return true;
}

inline void pool_deallocate(void* block, unsigned cls) {
  if (!push_cached(t_cache->bin_of_class(cls), block)) [[unlikely]]
    flush_and_deallocate(cls, block);
}

// Whether `offset` (of a pointer that region_owns() accepted) starts a block that malloc handed
// out: a whole block of its span's class, below what the span's bump index reached. A span that
// serves no class has carved nothing, so it accepts no offset.
inline bool is_handed_out_block(std::uintptr_t offset, unsigned span_byte) {
  const auto offset_in_span = static_cast<std::uint32_t>(offset & (kSpanSize - 1));
  return kSpanBlockStarts.is_block_start(span_byte, offset_in_span) &&
         offset_in_span <
             carved_end_of(g_region.spans[offset >> kSpanShift]).load(std::memory_order_relaxed);
}

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

// The same, but a pointer that is not a block is reported, naming `operation`, and aborts.
inline unsigned pooled_class_of(const void* p, const char* operation) {
  const unsigned cls = class_of_block(p);
  if (cls == kClassCount) [[unlikely]]
    report_invalid_pointer(operation, p);
  return cls;
}

// The class of p, a pointer that region_owns() accepted, when p is a block that malloc handed
// out: what free and realloc may take back into a cache. Anything else is reported, naming
// `operation`, and aborts; a block start past its span's carved end above all, which a cache
// would hand out, and the bump index again later, to a second owner.
inline unsigned handed_out_class_of(const void* p, const char* operation) {
  const std::uintptr_t offset = region_offset(p);
  const unsigned span_byte = g_region.span_class_plus_one[offset >> kSpanShift];
  if (!is_handed_out_block(offset, span_byte)) [[unlikely]]
    report_invalid_pointer(operation, p);
  return span_byte - 1;
}

// free() of a pointer that region_owns() accepted.
inline void pool_free(void* p) {
  pool_deallocate(p, handed_out_class_of(p, "free"));
}

}  // namespace poolalloc::internal
