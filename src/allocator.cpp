#include "allocator.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

#include "bootstrap.hpp"
#include "central_lists.hpp"
#include "decay.hpp"
#include "heap_sampler.hpp"
#include "platform.hpp"
#include "span_carving.hpp"
#include "tagged_system_blocks.hpp"

namespace poolalloc::internal {

void* allocate_slow(std::size_t size, const void* site) {
  if (count_malloc_bytes(size)) [[unlikely]] {
    if constexpr (kHeapProfile)
      return allocate_sampled(size, kMinAlignment,
                              site != nullptr ? site : POOLALLOC_RETURN_ADDRESS());
  }
  // g_pooled_limit is 0 until the allocator is initialised.
  const bool pooled = size <= g_pooled_limit || (size <= kLargestClassSize && g_pooled_limit == 0 &&
                                                 ensure_initialised() && size <= g_pooled_limit);
  // The fast path's pop failed already: the bin is empty, or the thread's mallocs were counted
  // down to its look at the clock (a second pop would count past it).
  if (pooled) {
    if (void* block = refill_and_allocate(class_of(size))) return block;
  }
  count_call_outside_pools();
  return allocate_large(size);
}

void free_unpooled(void* p) {
  if constexpr (kHeapProfile) {
    if (forget_if_sampled(p)) {
      // Kept as a spare sampled block: what glibc's free would have left in the tags' figures.
      discharge_system_block(p);
      count_call_outside_pools();
      return;
    }
  }
  free_outside_pools(p);
  count_call_outside_pools();
}

void* allocate_zeroed(std::size_t size, const void* site) {
  if (size > g_pooled_limit) {
    count_call_outside_pools();
    if (!count_malloc_bytes(size) || !kHeapProfile) [[likely]]
      return system_calloc(size);
    if constexpr (kHeapProfile) {
      void* block = allocate_sampled(size, kMinAlignment, site);
      if (block != nullptr) std::memset(block, 0, size);
      return block;
    }
  }
  void* block = allocate(size, site);
  // The whole usable size, as glibc does: README lets programs write malloc_usable_size bytes,
  // and a recycled block's slack would otherwise keep what its last owner wrote there.
  if (block != nullptr) std::memset(block, 0, usable_size(block));
  return block;
}

void* reallocate(void* p, std::size_t size, const void* site) {
  if (!region_owns(p)) {
    report_if_cached(p, "realloc");
    if constexpr (kHeapProfile) return reallocate_outside_pools(p, size, site);
    void* moved = system_realloc(p, size);
    if (moved != nullptr) count_malloc_bytes(size);  // the countdown to the look at the clock
    return moved;
  }
  const unsigned bin = handed_out_bin_or_report(p, "realloc");
  if (is_marked_free(p)) report_double_free("realloc", p, bin);
  const std::size_t old_size = bin_block_size(bin);
  if (size <= old_size && class_of(size) == bin_class(bin)) return p;
  void* moved = allocate(size, site);
  if (moved == nullptr) return nullptr;  // errno is ENOMEM; the old block is untouched
  // Programs may have written the whole usable size, not just what they asked for.
  std::memcpy(moved, p, size < old_size ? size : old_size);
  pool_deallocate(p, bin);
  return moved;
}

unsigned shared_bin_or_report(const void* p, const char* operation) {
  const unsigned bin = bin_of_shared_block(p);
  if (bin == kBinCount) report_invalid_pointer(operation, p);
  return bin;
}

void deallocate_shared(void* p) {
  pool_deallocate(p, shared_bin_or_report(p, "free"));
}

void* allocate_aligned(std::size_t alignment, std::size_t size, const void* site) {
  if (alignment <= kMinAlignment) return allocate(size, site);
  if (count_malloc_bytes(size)) [[unlikely]] {
    if constexpr (kHeapProfile) return allocate_sampled(size, alignment, site);
  }
  // Spans start on kSpanSize boundaries, so the blocks of a class whose size is a multiple of
  // the alignment are all aligned; every power of two up to 32 KiB is such a class.
  const std::size_t padded =
      (size < alignment ? alignment : size + alignment - 1) & ~(alignment - 1);
  if (padded <= g_pooled_limit && padded >= size) {
    unsigned cls = class_of(padded);
    if (class_size(cls) % alignment != 0) cls = class_of(std::bit_ceil(padded));
    if (void* block = pool_allocate(cls)) return block;
  }
  return system_memalign(alignment, size);
}

std::size_t usable_size(void* p) {
  if (p == nullptr) return 0;
  if (region_owns(p)) {
    const unsigned cls = class_of_block(p);
    if (cls == kClassCount) report_invalid_pointer("malloc_usable_size", p);
    return class_size(cls);
  }
  return system_usable_size(p);
}

bool trim(std::size_t pad) {
  flush_thread_cache();
  const bool released_pools = release_unused_memory();
  const bool released_system = system_trim(pad) != 0;
  return released_pools || released_system;
}

}  // namespace poolalloc::internal
