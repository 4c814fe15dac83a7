// System forwarding: what the pools do not serve (large requests, alignments above a page,
// anything once the region is exhausted) goes to glibc through its __libc_* entry points:
// plain link-time references, no dlsym during bootstrap. poolalloc must never define these
// names itself, or its calls would bind to its own definitions and recurse.
#pragma once

#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* p);
}

namespace poolalloc::internal {

struct alignas(64) SystemCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> bytes{0};
};
inline constinit SystemCounters g_system_counters;

// Counts the requests the system allocator served (a failed one is no request served).
inline void* counted(void* block, std::size_t size) {
  if (block != nullptr) {
    g_system_counters.requests.fetch_add(1, std::memory_order_relaxed);
    g_system_counters.bytes.fetch_add(size, std::memory_order_relaxed);
  }
  return block;
}

inline void* system_malloc(std::size_t size) {
  return counted(__libc_malloc(size), size);
}
// `size` bytes, zeroed; the caller checked for overflow.
inline void* system_calloc(std::size_t size) {
  return counted(__libc_calloc(1, size), size);
}
inline void* system_memalign(std::size_t alignment, std::size_t size) {
  return counted(__libc_memalign(alignment, size), size);
}
inline void* system_realloc(void* p, std::size_t size) {
  return __libc_realloc(p, size);
}
inline void system_free(void* p) {
  __libc_free(p);
}

// glibc 2.36 has no __libc_ names for these: its own functions are found with dlsym once,
// lazily, never during bootstrap (only a pointer the pools did not serve, or a program's
// explicit call, gets here).
std::size_t system_usable_size(void* p);
int system_trim(std::size_t pad);
struct mallinfo2 system_mallinfo2();
int system_malloc_info(int options, FILE* stream);

}  // namespace poolalloc::internal
