// The release allocator: routes each request to the pools or to the system allocator.
// Argument checks (overflow, zero sizes, alignments) are the exported functions' business.
// allocate and deallocate are inline so that malloc and free compile to the fast path itself.
#pragma once

#include <cstddef>

#include "fast_path.hpp"
#include "options.hpp"
#include "system_forwarding.hpp"

namespace poolalloc::internal {

// Everything but a hit in the thread cache: refilling it, initialising the allocator on the
// first small request, and forwarding to the system allocator. Out of line, and reached by a
// tail call, so that the fast path saves no register.
void* allocate_slow(std::size_t size);

// The fast path of malloc (its instruction counts stand in fast_path.hpp).
inline void* allocate(std::size_t size) {
  if (size <= g_pooled_limit) [[likely]] {
    if (void* block = pop_cached(class_of(size))) [[likely]]
      return block;
  }
  return allocate_slow(size);
}

// The fast path of free.
inline void deallocate(void* p) {
  if (region_owns(p)) [[likely]] {
    pool_free(p);
    return;
  }
  system_free(p);  // also nullptr, which it ignores
}

void* allocate_zeroed(std::size_t size);
// p is not nullptr and size is not 0.
void* reallocate(void* p, std::size_t size);
// `alignment` is a power of two.
void* allocate_aligned(std::size_t alignment, std::size_t size);
std::size_t usable_size(void* p);
// malloc_trim: gives this thread's cached blocks and every empty span back; true when memory
// was returned to the OS.
bool trim(std::size_t pad);

}  // namespace poolalloc::internal
