// Call sites with distinctive names for the debug heap's reports to name. Each is an
// extern "C" function that is never inlined and does not tail-call the allocator (the empty
// asm after the call keeps it out of tail position), so the caller address the library
// records lies inside it and its unmangled name appears in the report.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

// noipa (GCC): no clone such as debug_site_realloc.isra.0 either, which would rename the site.
#if defined(__clang__)
#define DEBUG_SITE extern "C" __attribute__((noinline)) inline
#else
#define DEBUG_SITE extern "C" __attribute__((noipa)) inline
#endif

DEBUG_SITE void* debug_site_malloc(std::size_t size) {
  void* p = std::malloc(size);
  asm volatile("" : "+r"(p));
  return p;
}

DEBUG_SITE void* debug_site_realloc(void* p, std::size_t size) {
  void* q = std::realloc(p, size);
  asm volatile("" : "+r"(q));
  return q;
}

DEBUG_SITE void debug_site_free(void* p) {
  std::free(p);
  asm volatile("" ::: "memory");
}

DEBUG_SITE void debug_site_second_free(void* p) {
  std::free(p);
  asm volatile("" ::: "memory");
}

DEBUG_SITE void* debug_site_new(std::size_t size) {
  void* p = ::operator new(size);
  asm volatile("" : "+r"(p));
  return p;
}

DEBUG_SITE void debug_site_sized_delete(void* p, std::size_t size) {
  ::operator delete(p, size);
  asm volatile("" ::: "memory");
}
