// The exported C allocation API. Every other symbol of the library is hidden.
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "allocator.hpp"
#include "poolalloc/poolalloc.h"
#include "stats.hpp"

#define POOLALLOC_EXPORT extern "C" __attribute__((visibility("default")))

using namespace poolalloc::internal;

namespace {

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

POOLALLOC_EXPORT void* malloc(std::size_t size) {
  return allocate(size);
}

POOLALLOC_EXPORT void free(void* p) {
  deallocate(p);
}

// Compatibility with binaries built against glibc versions that still had cfree.
POOLALLOC_EXPORT void cfree(void* p) {
  deallocate(p);
}

POOLALLOC_EXPORT void* calloc(std::size_t count, std::size_t size) {
  return allocate_zeroed(count, size);
}

POOLALLOC_EXPORT void* realloc(void* p, std::size_t size) {
  return reallocate(p, size);
}

POOLALLOC_EXPORT void* reallocarray(void* p, std::size_t count, std::size_t size) {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return reallocate(p, total);
}

POOLALLOC_EXPORT void* memalign(std::size_t alignment, std::size_t size) {
  return memalign_like_glibc(alignment, size);
}

// glibc 2.36 makes aligned_alloc an alias of memalign: no EINVAL for an alignment that is not
// a power of two, and sizes that are not a multiple of the alignment are accepted.
POOLALLOC_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) {
  return memalign_like_glibc(alignment, size);
}

POOLALLOC_EXPORT int posix_memalign(void** result, std::size_t alignment, std::size_t size) {
  if (alignment % sizeof(void*) != 0 || !std::has_single_bit(alignment)) return EINVAL;
  const int saved_errno = errno;
  void* block = allocate_aligned(alignment, size);
  errno = saved_errno;
  if (block == nullptr) return ENOMEM;
  *result = block;
  return 0;
}

POOLALLOC_EXPORT void* valloc(std::size_t size) {
  return allocate_aligned(page_size(), size);
}

POOLALLOC_EXPORT void* pvalloc(std::size_t size) {
  std::size_t rounded = 0;
  if (__builtin_add_overflow(size, page_size() - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  return allocate_aligned(page_size(), rounded & ~(page_size() - 1));
}

POOLALLOC_EXPORT std::size_t malloc_usable_size(void* p) {
  return usable_size(p);
}

POOLALLOC_EXPORT int malloc_trim(std::size_t pad) {
  return trim(pad) ? 1 : 0;
}

POOLALLOC_EXPORT void malloc_stats() {
  print_stats(STDERR_FILENO);
}

POOLALLOC_EXPORT struct mallinfo2 mallinfo2() {
  return pooled_mallinfo2();
}

POOLALLOC_EXPORT int poolalloc_owns(const void* p) {
  if (!region_owns(p)) return 0;
  const unsigned cls = g_region.span_class_plus_one[span_index_of(p)] - 1u;
  return cls < kClassCount &&
         kClassDivider[cls].divides(static_cast<std::uint32_t>(region_offset(p) & (kSpanSize - 1)));
}

POOLALLOC_EXPORT void poolalloc_print_stats(int fd) {
  print_stats(fd);
}

POOLALLOC_EXPORT int poolalloc_get_stats(struct poolalloc_stats* stats) {
  if (stats == nullptr) return -1;
  *stats = collect_stats();
  return 0;
}
