// The exported C allocation API, with glibc 2.36's argument semantics (Linux only: Windows
// programs keep their C runtime's malloc; poolalloc's own API is exports_poolalloc.cpp's). Each
// function checks its arguments and makes one call into the Heap (heap.hpp). Every other symbol
// of the library is hidden.
#include <malloc.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdint>

#include "glibc_semantics.hpp"
#include "heap.hpp"
#include "poolalloc/poolalloc.h"

#define POOLALLOC_EXPORT extern "C" POOLALLOC_VISIBLE
#define CALLER POOLALLOC_RETURN_ADDRESS()

using namespace poolalloc::internal;

namespace {

std::size_t page_size() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void* malloc(std::size_t size) {
  return Heap::malloc(size, CALLER);
}

POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void free(void* p) {
  Heap::free(p, CALLER);
}

// Compatibility with binaries built against glibc versions that still had cfree.
POOLALLOC_EXPORT void cfree(void* p) {
  Heap::free(p, CALLER);
}

POOLALLOC_EXPORT void* calloc(std::size_t count, std::size_t size) {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Heap::calloc(total, CALLER);
}

POOLALLOC_EXPORT void* realloc(void* p, std::size_t size) {
  return reallocate_like_glibc(p, size, CALLER);
}

POOLALLOC_EXPORT void* reallocarray(void* p, std::size_t count, std::size_t size) {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return reallocate_like_glibc(p, total, CALLER);
}

POOLALLOC_EXPORT void* memalign(std::size_t alignment, std::size_t size) {
  return memalign_like_glibc(alignment, size, CALLER);
}

// glibc 2.36 makes aligned_alloc an alias of memalign: no EINVAL for an alignment that is not
// a power of two, and sizes that are not a multiple of the alignment are accepted.
POOLALLOC_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) {
  return memalign_like_glibc(alignment, size, CALLER);
}

POOLALLOC_EXPORT int posix_memalign(void** result, std::size_t alignment, std::size_t size) {
  // (alignment & (alignment - 1)): std::has_single_bit would call libgcc's popcount.
  if (alignment == 0 || alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  // As glibc 2.36: errno is left at ENOMEM on failure and untouched on success.
  const int saved_errno = errno;
  void* block = Heap::aligned(alignment, size, CALLER);
  if (block == nullptr) {
    errno = ENOMEM;
    return ENOMEM;
  }
  errno = saved_errno;
  *result = block;
  return 0;
}

POOLALLOC_EXPORT void* valloc(std::size_t size) {
  return Heap::aligned(page_size(), size, CALLER);
}

POOLALLOC_EXPORT void* pvalloc(std::size_t size) {
  std::size_t rounded = 0;
  if (__builtin_add_overflow(size, page_size() - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Heap::aligned(page_size(), rounded & ~(page_size() - 1), CALLER);
}

POOLALLOC_EXPORT std::size_t malloc_usable_size(void* p) {
  return Heap::usable_size(p, CALLER);
}

POOLALLOC_EXPORT int malloc_trim(std::size_t pad) {
  return Heap::trim(pad) ? 1 : 0;
}

// glibc's, which serves the requests the pools do not; poolalloc sets two of its parameters
// itself until the program sets one (system_forwarding.cpp).
POOLALLOC_EXPORT int mallopt(int param, int value) {
  return Heap::mallopt(param, value);
}

POOLALLOC_EXPORT void malloc_stats() {
  Heap::malloc_stats();
}

POOLALLOC_EXPORT struct mallinfo2 mallinfo2() {
  return Heap::mallinfo2();
}

// mallinfo's fields are int: each saturates at INT_MAX (glibc 2.36 truncates them instead).
POOLALLOC_EXPORT struct mallinfo mallinfo() {
  return Heap::mallinfo();
}

POOLALLOC_EXPORT int malloc_info(int options, FILE* stream) {
  return Heap::malloc_info(options, stream);
}

namespace {
// Linked from libpoolalloc.a, this object brings poolalloc's own API with it (the library's
// constructor is there), whichever of the two a program names.
[[gnu::used]] const char* (*const g_own_api_comes_along)() = &poolalloc_version;
}  // namespace
