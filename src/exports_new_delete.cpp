// The exported C++ replaceable allocation functions: every operator new and delete that
// libstdc++ exports. The size given to a sized delete is only a hint and is not trusted.
#include <new>

#include "allocator.hpp"

#define POOLALLOC_EXPORT __attribute__((visibility("default")))

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

void* plain(std::size_t size) {
  return allocate_or_throw([size] { return allocate(size); });
}
void* aligned(std::size_t size, std::align_val_t alignment) {
  return allocate_or_throw(
      [=] { return allocate_aligned(static_cast<std::size_t>(alignment), size); });
}
void* plain_nothrow(std::size_t size) noexcept {
  return allocate_or_null([size] { return allocate(size); });
}
void* aligned_nothrow(std::size_t size, std::align_val_t alignment) noexcept {
  return allocate_or_null(
      [=] { return allocate_aligned(static_cast<std::size_t>(alignment), size); });
}

}  // namespace

POOLALLOC_EXPORT void* operator new(std::size_t size) {
  return plain(size);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size) {
  return plain(size);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return plain_nothrow(size);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return plain_nothrow(size);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, std::align_val_t alignment) {
  return aligned(size, alignment);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment) {
  return aligned(size, alignment);
}
POOLALLOC_EXPORT void* operator new(std::size_t size, std::align_val_t alignment,
                                    const std::nothrow_t&) noexcept {
  return aligned_nothrow(size, alignment);
}
POOLALLOC_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment,
                                      const std::nothrow_t&) noexcept {
  return aligned_nothrow(size, alignment);
}

POOLALLOC_EXPORT void operator delete(void* p) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete(void* p, std::size_t) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::size_t) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete(void* p, std::align_val_t) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::align_val_t) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  deallocate(p);
}
POOLALLOC_EXPORT void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  deallocate(p);
}
