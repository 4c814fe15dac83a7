// The exported C++ replaceable allocation functions: every operator new and delete that
// libstdc++ exports. The size given to a sized delete is only a hint and is not trusted.
#include <stdlib.h>

#include <new>

#include "heap.hpp"
#include "misuse.hpp"

#define POOLALLOC_EXPORT __attribute__((visibility("default")))
#define CALLER __builtin_return_address(0)

// The C++ runtime is the program's. libpoolalloc.so links none: a C program would load
// libstdc++, libm and libgcc_s (1.3 MiB of resident memory, and their start-up) for nothing but
// the bad_alloc that operator new throws here. So the runtime's symbols that this file uses are
// weak references, which the loader binds to the runtime that a program calling operator new
// has loaded (libstdc++, or libc++abi). Where none is loaded, as in a C program that dlopen()s
// a C++ library with RTLD_LOCAL, they stay null: operator new then reports running out of
// memory instead of throwing, and the nothrow forms return nullptr.
asm(".weak __cxa_allocate_exception");
asm(".weak __cxa_throw");
asm(".weak __cxa_begin_catch");
asm(".weak __cxa_end_catch");
asm(".weak __gxx_personality_v0");
asm(".weak _Unwind_Resume");
asm(".weak _ZTISt9bad_alloc");        // typeinfo for std::bad_alloc
asm(".weak _ZTVSt9bad_alloc");        // its vtable
asm(".weak _ZNSt9bad_allocD1Ev");     // its destructor
asm(".weak _ZSt15get_new_handlerv");  // std::get_new_handler
asm(".weak _ZSt9terminatev");         // std::terminate, which clang's catch handlers call
// Whether a runtime is loaded is asked of a function that both runtimes export and that no
// compiler declares by itself: clang treats __cxa_throw, which it declares for every throw, as
// never null, and folds the test away.
extern "C" __attribute__((weak)) void* __cxa_get_globals();

using namespace poolalloc::internal;

namespace {

bool have_cxx_runtime() {
  return __cxa_get_globals != nullptr;
}

// [new.delete.single]: on failure call the new-handler and retry; without one, throw.
template <class Allocate>
void* allocate_or_throw(Allocate allocate_once, std::size_t size) {
  for (;;) {
    if (void* p = allocate_once()) return p;
    if (!have_cxx_runtime()) report_out_of_memory_without_cxx_runtime(size);
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

template <class Allocate>
void* allocate_or_null(Allocate allocate_once, std::size_t size) noexcept {
  if (!have_cxx_runtime()) return allocate_once();
  try {
    return allocate_or_throw(allocate_once, size);
  } catch (...) {
    return nullptr;
  }
}

void* plain(std::size_t size, const void* site) {
  return allocate_or_throw([=] { return Heap::malloc(size, site); }, size);
}
void* aligned(std::size_t size, std::align_val_t alignment, const void* site) {
  return allocate_or_throw(
      [=] { return Heap::aligned(static_cast<std::size_t>(alignment), size, site); }, size);
}
void* plain_nothrow(std::size_t size, const void* site) noexcept {
  return allocate_or_null([=] { return Heap::malloc(size, site); }, size);
}
void* aligned_nothrow(std::size_t size, std::align_val_t alignment, const void* site) noexcept {
  return allocate_or_null(
      [=] { return Heap::aligned(static_cast<std::size_t>(alignment), size, site); }, size);
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
