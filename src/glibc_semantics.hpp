// Argument semantics of glibc 2.36 that more than one export shares: realloc's and memalign's,
// whichever name a program calls them by (realloc and poolalloc_realloc, memalign,
// aligned_alloc and poolalloc_aligned_alloc).
#pragma once

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "heap.hpp"

namespace poolalloc::internal {

// glibc's memalign: an alignment that is not a power of two is rounded up to one.
inline void* memalign_like_glibc(std::size_t alignment, std::size_t size, const void* site) {
  if (alignment > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return nullptr;
  }
  return Heap::aligned(std::bit_ceil(alignment), size, site);
}

inline void* reallocate_like_glibc(void* p, std::size_t size, const void* site) {
  if (p == nullptr) return Heap::malloc(size, site);
  if (size == 0) {  // glibc frees and returns NULL
    Heap::free(p, site);
    return nullptr;
  }
  return Heap::realloc(p, size, site);
}

}  // namespace poolalloc::internal
