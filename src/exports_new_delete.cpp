// The exported C++ replaceable allocation functions: every operator new and delete that
// libstdc++ exports. The size given to a sized delete is only a hint and is not trusted.
#include <algorithm>
#include <cstdint>
#include <new>

#include "heap.hpp"
#include "misuse.hpp"
#include "platform.hpp"
#include "poolalloc/poolalloc.h"

#if POOLALLOC_LINUX
#include <dlfcn.h>
#include <stdlib.h>
#endif

#define POOLALLOC_EXPORT POOLALLOC_VISIBLE
#define CALLER POOLALLOC_RETURN_ADDRESS()

using namespace poolalloc::internal;

namespace {

#if POOLALLOC_LINUX

// A failed allocation is the C++ runtime's business: [new.delete.single] calls the new-handler
// and retries, and without a handler throws std::bad_alloc; the nothrow forms return null when
// the handler throws. libpoolalloc.so links no runtime (a C program would load libstdc++, libm
// and libgcc_s, 1.3 MiB of resident memory, for nothing), so a request that failed here goes to
// the same operator of the program's runtime, looked up when it fails (a C program may load one
// later, with a C++ library): that operator retries through this library's malloc or
// aligned_alloc, calls the handler, and throws, and the exception unwinds through these
// functions, which hold nothing. With no runtime loaded (or only one linked statically into a
// library), the throwing forms report running out of memory and abort, and the nothrow forms
// return null.
template <class Operator>
Operator runtime_operator(const char* mangled_name) {
  if (void* found = dlsym(RTLD_NEXT, mangled_name)) return reinterpret_cast<Operator>(found);
  // Not in the global scope: a runtime that came with a C++ library opened with RTLD_LOCAL
  // (Python's extension modules are) is found by its name.
  for (const char* runtime : {"libstdc++.so.6", "libc++.so.1"}) {
    void* library = dlopen(runtime, RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) continue;
    void* found = dlsym(library, mangled_name);
    dlclose(library);  // the reference RTLD_NOLOAD took: the library stays loaded
    if (found != nullptr) return reinterpret_cast<Operator>(found);
  }
  return nullptr;
}

using New = void* (*)(std::size_t);
using AlignedNew = void* (*)(std::size_t, std::align_val_t);
using NothrowNew = void* (*)(std::size_t, const std::nothrow_t&) noexcept;
using AlignedNothrowNew = void* (*)(std::size_t, std::align_val_t, const std::nothrow_t&) noexcept;

// The runtimes refuse, with std::bad_alloc, an alignment that is not a power of two.
bool valid(std::align_val_t alignment) {
  const auto value = static_cast<std::size_t>(alignment);
  return value != 0 && (value & (value - 1)) == 0;
}

// The size to hand the runtime's aligned operator new. libstdc++ 12 rounds a size up to the
// alignment without checking, so that an impossible size past SIZE_MAX - alignment wraps to a
// small one, which it would allocate: such a size is passed as the largest that does not wrap,
// equally impossible (over PTRDIFF_MAX).
std::size_t unwrapping(std::size_t size, std::align_val_t alignment) {
  return std::min(size, SIZE_MAX - (static_cast<std::size_t>(alignment) - 1));
}

// The failures, out of line: inlined, their lookup made the operators save six registers
// before their fast path.
[[gnu::noinline, gnu::cold]] void* plain_failed(std::size_t size) {
  if (const auto runtime = runtime_operator<New>("_Znwm")) return runtime(size);
  report_out_of_memory_without_cxx_runtime(size);
}
[[gnu::noinline, gnu::cold]] void* plain_nothrow_failed(std::size_t size) noexcept {
  const auto runtime = runtime_operator<NothrowNew>("_ZnwmRKSt9nothrow_t");
  return runtime != nullptr ? runtime(size, std::nothrow_t{}) : nullptr;
}
[[gnu::noinline, gnu::cold]] void* aligned_failed(std::size_t size, std::align_val_t alignment) {
  if (const auto runtime = runtime_operator<AlignedNew>("_ZnwmSt11align_val_t"))
    return runtime(unwrapping(size, alignment), alignment);
  report_out_of_memory_without_cxx_runtime(size);
}
[[gnu::noinline, gnu::cold]] void* aligned_nothrow_failed(std::size_t size,
                                                          std::align_val_t alignment) noexcept {
  const auto runtime = runtime_operator<AlignedNothrowNew>("_ZnwmSt11align_val_tRKSt9nothrow_t");
  return runtime != nullptr ? runtime(unwrapping(size, alignment), alignment, std::nothrow_t{})
                            : nullptr;
}

void* plain(std::size_t size, const void* site) {
  if (void* p = Heap::malloc_for_new(size, site)) [[likely]]
    return p;
  return plain_failed(size);
}
void* aligned(std::size_t size, std::align_val_t alignment, const void* site) {
  if (valid(alignment)) {
    if (void* p = Heap::aligned(static_cast<std::size_t>(alignment), size, site)) return p;
  }
  return aligned_failed(size, alignment);
}
void* plain_nothrow(std::size_t size, const void* site) noexcept {
  if (void* p = Heap::malloc_for_new(size, site)) [[likely]]
    return p;
  return plain_nothrow_failed(size);
}
void* aligned_nothrow(std::size_t size, std::align_val_t alignment, const void* site) noexcept {
  if (valid(alignment)) {
    if (void* p = Heap::aligned(static_cast<std::size_t>(alignment), size, site)) return p;
  }
  return aligned_nothrow_failed(size, alignment);
}

// Linked from libpoolalloc.a, this object must bring exports.cpp's malloc with it: a program that
// names only new and delete would otherwise take the operators from the archive and leave
// malloc (so strdup, every library's allocations, and frees of them) to glibc.
[[gnu::used]] void* (*const g_malloc_comes_along)(std::size_t) = &malloc;
#else
// Windows: the static library is linked into the program, whose C++ runtime is linked too, so a
// failure is handled here as [new.delete.single] says: the new-handler is called and the request
// retried until it succeeds, or std::bad_alloc is thrown when there is no handler (this file
// alone is compiled with exceptions, src/CMakeLists.txt). The nothrow forms return null where
// the throwing ones would throw.
template <class Allocate>
void* until_allocated(Allocate allocate) {
  for (;;) {
    if (void* p = allocate()) [[likely]]
      return p;
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

bool valid(std::align_val_t alignment) {
  const auto value = static_cast<std::size_t>(alignment);
  return value != 0 && (value & (value - 1)) == 0;
}

void* plain(std::size_t size, const void* site) {
  return until_allocated([&] { return Heap::malloc_for_new(size, site); });
}
void* aligned(std::size_t size, std::align_val_t alignment, const void* site) {
  if (!valid(alignment)) throw std::bad_alloc();
  return until_allocated(
      [&] { return Heap::aligned(static_cast<std::size_t>(alignment), size, site); });
}
void* plain_nothrow(std::size_t size, const void* site) noexcept {
  try {
    return plain(size, site);
  } catch (...) {
    return nullptr;
  }
}
void* aligned_nothrow(std::size_t size, std::align_val_t alignment, const void* site) noexcept {
  try {
    return aligned(size, alignment, site);
  } catch (...) {
    return nullptr;
  }
}
#endif

// Linked from libpoolalloc.a, this object brings poolalloc's own API with it, and with it the
// library's constructor (exports_poolalloc.cpp).
[[gnu::used]] void* (*const g_own_api_comes_along)(std::size_t) = &poolalloc_malloc;

}  // namespace

POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void* operator new(std::size_t size) {
  return plain(size, CALLER);
}
POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void* operator new[](std::size_t size) {
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

POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void operator delete(void* p) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void operator delete[](void* p) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Heap::free(p, CALLER);
}
POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void operator delete(void* p, std::size_t size) noexcept {
  Heap::sized_free(p, size, CALLER);
}
POOLALLOC_EXPORT POOLALLOC_LINE_ALIGNED void operator delete[](void* p, std::size_t size) noexcept {
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
