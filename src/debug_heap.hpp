// The debug heap of libpoolalloc-debug: a checking layer over the release allocator. Each
// block gets guard bytes before and after it and fill patterns; every live block is recorded
// (size, call site) in a registry kept apart from the blocks; freed blocks wait in a
// quarantine before they are reused. It reports, in one line naming the address, the size
// class and the call sites: double and invalid frees, writes past either end of a block,
// writes into freed blocks, sized deletes of the wrong size, and leaks at exit.
#pragma once

#include "platform.hpp"

#if POOLALLOC_LINUX
#include <malloc.h>
#endif

#include <cstddef>
#include <cstdio>

#include "heap_tags.hpp"
#include "poolalloc/poolalloc.h"
#include "stats.hpp"
#include "system_forwarding.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {

inline constexpr unsigned char kFreshFill = 0xa5;  // a block's bytes when malloc returns it
inline constexpr unsigned char kFreedFill = 0x5a;  // a freed block's bytes in the quarantine
inline constexpr unsigned char kGuardFill = 0xfd;  // the guard bytes around each block
inline constexpr std::size_t kGuardBytes = 16;

struct DebugHeap : HeapTags {
  static constexpr bool kDebugBuild = true;
  static void* malloc(std::size_t size, const void* site);
  static void* malloc_for_new(std::size_t size, const void* site) { return malloc(size, site); }
  static void* calloc(std::size_t size, const void* site);
  static void* aligned(std::size_t alignment, std::size_t size, const void* site);
  static void* realloc(void* p, std::size_t size, const void* site);
  static void free(void* p, const void* site);
  static void sized_free(void* p, std::size_t size, const void* site);
  static std::size_t usable_size(void* p, const void* site);
  // A block the debug heap handed out (live, or freed and still in the quarantine) whose
  // memory the pools serve. The rest is the release allocator's answer.
  static bool owns(const void* p);
  static bool trim(std::size_t pad);
  static void print_stats(int fd);
  static poolalloc_stats stats();
#if POOLALLOC_LINUX
  static void malloc_stats();
  static struct mallinfo2 mallinfo2();
  static struct mallinfo mallinfo();
  static int malloc_info(int options, FILE* stream);
  // The heap profile samples the debug heap's allocations as the release build's; a dump writes
  // the exact profile instead: every live block, by the call site that allocated it.
  static void profile_sample(std::size_t mean);
  static int profile_dump(const char* path);
  // glibc's, which serves what the pools do not (system_forwarding.cpp).
  static int mallopt(int param, int value) {
    return system_mallopt(param, value);
  }
#endif
};

}  // namespace poolalloc::internal
