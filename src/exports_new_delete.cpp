// The exported C++ replaceable allocation functions: every operator new and delete that
// libstdc++ exports. The size given to a sized delete is only a hint and is not trusted.
#include <stdlib.h>

#include <new>

#include "heap.hpp"

#define POOLALLOC_EXPORT __attribute__((visibility("default")))
#define CALLER __builtin_return_address(0)

using namespace poolalloc::internal;

namespace {

// [new.delete.single]: on failure call the new-handler and retry; without one, throw.
template <class Allocate>
void* allocate_or_throw(Allocate allocate_once) {
  for (;;) {
    if (void* p = allocate_once()) return p;
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

template <class Allocate>
void* allocate_or_null(Allocate allocate_once) noexcept {
  try {
    return allocate_or_throw(allocate_once);
  } catch (...) {
    return nullptr;
  }
}

void* plain(std::size_t size, const void* site) {
  return allocate_or_throw([=] { return Heap::malloc(size, site); });
}
void* aligned(std::size_t size, std::align_val_t alignment, const void* site) {
  return allocate_or_throw(
      [=] { return Heap::aligned(static_cast<std::size_t>(alignment), size, site); });
}
void* plain_nothrow(std::size_t size, const void* site) noexcept {
  return allocate_or_null([=] { return Heap::malloc(size, site); });
}
void* aligned_nothrow(std::size_t size, std::align_val_t alignment, const void* site) noexcept {
  return allocate_or_null(
      [=] { return Heap::aligned(static_cast<std::size_t>(alignment), size, site); });
}

// Linked from libpoolalloc.a, this object must bring exports.cpp's malloc with it: a program that
// names only new and delete would otherwise take the operators from the archive and leave
// malloc (so strdup, every library's allocations, and frees of them) to glibc.
[[gnu::used]] void* (*const g_malloc_comes_along)(std::size_t) = &malloc;

}  // namespace

POOLALLOC_EXPORT void* operator new(std::size_t size) {
  return plain(size, CALLER);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size) {
  return plain(size, CALLER);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return plain_nothrow(size, CALLER);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return plain_nothrow(size, CALLER);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, std::align_val_t alignment) {
  return aligned(size, alignment, CALLER);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment) {
  return aligned(size, alignment, CALLER);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, std::align_val_t alignment,
                                    const std::nothrow_t&) noexcept {
  return aligned_nothrow(size, alignment, CALLER);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment,
                                      const std::nothrow_t&) noexcept {
  return aligned_nothrow(size, alignment, CALLER);
}

POOLALLOC_EXPORT void operator delete(void* p) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, std::size_t size) noexcept {
  Heap::sized_free(p, size, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::size_t size) noexcept {
  Heap::sized_free(p, size, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, std::align_val_t) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::align_val_t) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, std::size_t size, std::align_val_t) noexcept {
  Heap::sized_free(p, size, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::size_t size, std::align_val_t) noexcept {
  Heap::sized_free(p, size, CALLER);
}
