// The fast path: allocation and free of a pooled block when the calling thread's cache can
// serve it. A table lookup, a handful of loads and stores to thread-local memory, no lock and
// no atomic; everything else is in the slow paths of thread_cache.cpp.
#pragma once

#include <array>
#include <cstdint>

#include "misuse.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {

inline constexpr auto kClassDivider = [] {
  std::array<detail::BlockDivider, kClassCount> dividers{};
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    dividers[cls] = detail::BlockDivider(class_size(cls));
  return dividers;
}();

// A block of class `cls` from this thread's cache; nullptr when the bin is empty.
inline void* pop_cached(std::size_t cls) {
  CacheBin& bin = t_cache->bins[cls];
  void* block = bin.head;
  if (block != nullptr) [[likely]] {
    void* next = *static_cast<void**>(block);
    --bin.count;
    ++bin.requests;
    bin.head = next;
  }
  return block;
}

// A block of class `cls`, or nullptr when the pools cannot serve it.
inline void* pool_allocate(unsigned cls) {
  if (void* block = pop_cached(cls)) [[likely]]
    return block;
  return refill_and_allocate(cls);
}

inline void pool_deallocate(void* block, unsigned cls) {
  CacheBin& bin = t_cache->bins[cls];
  if (bin.count < bin.limit) [[likely]] {
    *static_cast<void**>(block) = bin.head;
    bin.head = block;
    ++bin.count;
    return;
  }
  flush_and_deallocate(cls, block);
}

// The class of p, a pointer that region_owns() accepted, when p is the start of a block in a
// span that serves a class; kClassCount otherwise.
inline unsigned class_of_block(const void* p) {
  const std::uintptr_t offset = region_offset(p);
  const unsigned cls = g_region.span_class_plus_one[offset >> kSpanShift] - 1u;
  const auto offset_in_span = static_cast<std::uint32_t>(offset & (kSpanSize - 1));
  if (cls >= kClassCount || !kClassDivider[cls].divides(offset_in_span)) [[unlikely]]
    return kClassCount;
  return cls;
}

// The same, but a pointer that is not a block is reported, naming `operation`, and aborts.
inline unsigned pooled_class_of(const void* p, const char* operation) {
  const unsigned cls = class_of_block(p);
  if (cls == kClassCount) [[unlikely]]
    report_invalid_pointer(operation, p);
  return cls;
}

}  // namespace poolalloc::internal
