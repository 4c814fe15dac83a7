// System forwarding: what the pools do not serve (large requests, alignments above a page,
// anything once the region is exhausted) goes to the system allocator. On Linux that is glibc,
// through its __libc_* entry points: plain link-time references, no dlsym during bootstrap.
// poolalloc must never define these names itself, or its calls would bind to its own definitions
// and recurse. On Windows it is the C runtime's heap (system_forwarding_windows.cpp), whose
// malloc the static library leaves as it is.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "platform.hpp"
#include "tag_registry.hpp"
#include "tagged_system_blocks.hpp"

#if POOLALLOC_LINUX
#include <malloc.h>

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* p);
int __libc_mallopt(int param, int value);
}
#endif

namespace poolalloc::internal {

// The system allocator's entry points, which count nothing.
#if POOLALLOC_LINUX
inline void* system_heap_malloc(std::size_t size) {
  return __libc_malloc(size);
}
inline void* system_heap_calloc(std::size_t size) {
  return __libc_calloc(1, size);
}
inline void* system_heap_realloc(void* p, std::size_t size) {
  return __libc_realloc(p, size);
}
inline void* system_heap_memalign(std::size_t alignment, std::size_t size) {
  return __libc_memalign(alignment, size);
}
inline void system_heap_free(void* p) {
  __libc_free(p);
}
#else
// The C runtime's malloc, calloc and realloc (never _aligned_malloc's blocks, which its free
// cannot take: an aligned block is carved from a malloc block, and recognised at its free by a
// mark before it). system_heap_free and system_heap_realloc report, and abort on, a pointer that
// is neither (the C runtime's heap validates it), as glibc's free does on Linux.
void* system_heap_malloc(std::size_t size);
void* system_heap_calloc(std::size_t size);
void* system_heap_realloc(void* p, std::size_t size);
void* system_heap_memalign(std::size_t alignment, std::size_t size);
void system_heap_free(void* p);
// Whether p is a live block of the C runtime's malloc (its heap validates it), which its free
// takes: not one carved for an alignment. The debug heap asks, for the blocks it never recorded.
bool system_heap_holds(void* p);
#endif

struct alignas(64) SystemCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> bytes{0};
};
inline constinit SystemCounters g_system_counters;

#if POOLALLOC_LINUX
// glibc's heap thresholds, which poolalloc sets itself (system_forwarding.cpp says why): the
// request size up to which glibc serves from its heaps rather than with mmap, or SIZE_MAX
// while glibc's own dynamic thresholds are in force (before start-up, when the environment or
// the program set them, or when the pools are unavailable).
inline constinit std::atomic<std::size_t> g_system_mmap_threshold{SIZE_MAX};

// Raises the thresholds after a request of `size` bytes beyond the mmap threshold.
void raise_system_thresholds(std::size_t size);

// At start-up, with the pools available: poolalloc sets glibc's thresholds from now on, unless
// the environment sets them (GLIBC_TUNABLES, MALLOC_*_).
void take_over_system_thresholds();

// mallopt: a program that sets one of the thresholds itself keeps it.
int system_mallopt(int param, int value);
#endif

// Counts the requests the system allocator served, of `size` bytes (a failed one is no request
// served), and raises glibc's thresholds as glibc itself would (system_forwarding.cpp) for the
// `glibc_size` bytes glibc was asked for.
inline void count_system_request(const void* block, std::size_t size, std::size_t glibc_size) {
#if POOLALLOC_LINUX
  if (glibc_size > g_system_mmap_threshold.load(std::memory_order_relaxed)) [[unlikely]]
    raise_system_thresholds(glibc_size);
#else
  static_cast<void>(glibc_size);  // Windows: no thresholds to raise
#endif
  if (block != nullptr) {
    g_system_counters.requests.fetch_add(1, std::memory_order_relaxed);
    g_system_counters.bytes.fetch_add(size, std::memory_order_relaxed);
  }
}
// Counts a request, and charges its block to the thread's memory tag once tags are in use
// (tagged_system_blocks.hpp).
inline void* counted(void* block, std::size_t size, std::size_t glibc_size) {
  count_system_request(block, size, glibc_size);
  if (block != nullptr && g_tags_pushed.load(std::memory_order_relaxed)) [[unlikely]]
    charge_system_block(block, size);
  return block;
}
inline void* counted(void* block, std::size_t size) {
  return counted(block, size, size);
}

inline void* system_malloc(std::size_t size) {
  return counted(system_heap_malloc(size), size);
}
// malloc(size) served with a block of `rounded` bytes (large_blocks.hpp): a request of `size`.
inline void* system_malloc_rounded(std::size_t size, std::size_t rounded) {
  return counted(system_heap_malloc(rounded), size, rounded);
}
// `size` bytes, zeroed; the caller checked for overflow.
inline void* system_calloc(std::size_t size) {
  return counted(system_heap_calloc(size), size);
}
inline void* system_memalign(std::size_t alignment, std::size_t size) {
  return counted(system_heap_memalign(alignment, size), size);
}
// A request too, of the new size, whether glibc moves the block or not. A block that moves is
// charged to the current tag, as a new block, and the old one's charge goes; one that glibc
// keeps in place keeps its tag (or its lack of one), counted at the new size; one that glibc
// fails to resize keeps its charge as it was. The old charge leaves the table first: once glibc
// has freed the old block, another thread may be handed its address.
inline void* system_realloc(void* p, std::size_t size) {
  const SystemCharge old = discharge_system_block(p);
  void* block = system_heap_realloc(p, size);
  count_system_request(block, size, size);
  if (block == nullptr) {
    recharge_system_block(p, old);
  } else if (block == p) {
    recharge_system_block(p, {old.tag, size, old.found});
  } else if (g_tags_pushed.load(std::memory_order_relaxed)) [[unlikely]] {
    charge_system_block(block, size);
  }
  return block;
}
inline void system_free(void* p) {
  system_heap_free(p);
}

// glibc 2.36 has no __libc_ names for these: its own functions are found with dlsym once,
// lazily, never during bootstrap (only a pointer the pools did not serve, or a program's
// explicit call, gets here). On Windows, the C runtime's _msize and _heapmin.
std::size_t system_usable_size(void* p);
int system_trim(std::size_t pad);
#if POOLALLOC_LINUX
struct mallinfo2 system_mallinfo2();
int system_malloc_info(int options, FILE* stream);
void system_malloc_stats();
#endif

}  // namespace poolalloc::internal
