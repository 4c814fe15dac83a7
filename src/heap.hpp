// The heap behind the exported functions: the release allocator, or in libpoolalloc-debug the
// checking layer over it (debug_heap.hpp). Every exported function is one call into Heap, so
// both builds answer every export alike. The exported functions check their arguments and
// pass the caller's address along, which only the debug heap uses (to name call sites).
#pragma once

#include <cstddef>
#include <cstdio>

#include "platform.hpp"

#if POOLALLOC_DEBUG_HEAP
#include "debug_heap.hpp"
#else
#include "allocator.hpp"
#include "heap_tags.hpp"
#include "stats.hpp"
#if POOLALLOC_LINUX
#include "heap_profile.hpp"
#include "heap_sampler.hpp"
#endif
#endif

namespace poolalloc::internal {

#if POOLALLOC_DEBUG_HEAP
using Heap = DebugHeap;
#else
struct ReleaseHeap : HeapTags {
  static constexpr bool kDebugBuild = false;
  static void* malloc(std::size_t size, const void*) { return allocate(size); }
  // operator new's: it calls the slow path where malloc reaches it by a tail call (it handles a
  // failure after), so it passes its caller's address on, where a sample's stack starts.
  static void* malloc_for_new(std::size_t size, const void* site) { return allocate(size, site); }
  static void* calloc(std::size_t size, const void* site) { return allocate_zeroed(size, site); }
  static void* aligned(std::size_t alignment, std::size_t size, const void* site) {
    return allocate_aligned(alignment, size, site);
  }
  static void* realloc(void* p, std::size_t size, const void* site) {
    return reallocate(p, size, site);
  }
  static void free(void* p, const void*) { deallocate(p); }
  static void sized_free(void* p, std::size_t, const void*) { deallocate(p); }
  static std::size_t usable_size(void* p, const void*) { return internal::usable_size(p); }
  // A live or free block of the pools, by its first byte.
  static bool owns(const void* p) { return region_owns(p) && class_of_block(p) != kClassCount; }
  static bool trim(std::size_t pad) { return internal::trim(pad); }
  static void print_stats(int fd) { internal::print_stats(fd); }
  static poolalloc_stats stats() { return collect_stats(); }
#if POOLALLOC_LINUX
  static void malloc_stats() {
    print_malloc_stats();
  }
  static struct mallinfo2 mallinfo2() {
    return pooled_mallinfo2();
  }
  static struct mallinfo mallinfo() {
    return pooled_mallinfo();
  }
  static int malloc_info(int options, FILE* stream) {
    return pooled_malloc_info(options, stream);
  }
  static void profile_sample(std::size_t mean) {
    set_sample_mean(static_cast<std::int64_t>(mean));
  }
  static int profile_dump(const char* path) {
    return dump_heap_profile(path);
  }
  // glibc's, which serves what the pools do not (system_forwarding.cpp).
  static int mallopt(int param, int value) {
    return system_mallopt(param, value);
  }
#endif
};
using Heap = ReleaseHeap;
#endif

}  // namespace poolalloc::internal
