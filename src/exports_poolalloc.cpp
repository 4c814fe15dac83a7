// poolalloc's own API (poolalloc.h), on every platform: the allocation functions under
// poolalloc's names, for an engine that routes its allocator interface to them (on Linux the
// same as malloc & co, which exports.cpp exports), the statistics, the heap profile and the
// memory tags; and the library's constructor. Each function checks its arguments and makes one
// call into the Heap (heap.hpp).
#include <cerrno>
#include <cstdint>

#include "bootstrap.hpp"
#include "glibc_semantics.hpp"
#include "heap.hpp"
#include "platform.hpp"
#include "poolalloc/poolalloc.h"

#define POOLALLOC_EXPORT extern "C" POOLALLOC_VISIBLE
#define CALLER POOLALLOC_RETURN_ADDRESS()

using namespace poolalloc::internal;

namespace {

// The library's constructor (the release and the debug build each have theirs).
POOLALLOC_AT_LOAD(on_load) {
  start_up(Heap::kDebugBuild);
}

}  // namespace

POOLALLOC_EXPORT void* poolalloc_malloc(std::size_t size) {
  return Heap::malloc(size, CALLER);
}

// calloc's overflow check, written without a compiler's builtin (exports.cpp's calloc is
// Linux's): MSVC has none of that name.
POOLALLOC_EXPORT void* poolalloc_calloc(std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return Heap::calloc(count * size, CALLER);
}

POOLALLOC_EXPORT void poolalloc_free(void* p) {
  Heap::free(p, CALLER);
}

POOLALLOC_EXPORT void* poolalloc_realloc(void* p, std::size_t size) {
  return reallocate_like_glibc(p, size, CALLER);
}

POOLALLOC_EXPORT void* poolalloc_aligned_alloc(std::size_t alignment, std::size_t size) {
  return memalign_like_glibc(alignment, size, CALLER);
}

POOLALLOC_EXPORT std::size_t poolalloc_usable_size(void* p) {
  return Heap::usable_size(p, CALLER);
}

POOLALLOC_EXPORT const char* poolalloc_version() {
  return POOLALLOC_VERSION_STRING;
}

POOLALLOC_EXPORT int poolalloc_owns(const void* p) {
  return Heap::owns(p) ? 1 : 0;
}

POOLALLOC_EXPORT void poolalloc_print_stats(int fd) {
  Heap::print_stats(fd);
}

POOLALLOC_EXPORT int poolalloc_get_stats(struct poolalloc_stats* stats) {
  if (stats == nullptr) return -1;
  *stats = Heap::stats();
  return 0;
}

// The heap profile is Linux's (platform.hpp): on Windows both fail with ENOSYS.
POOLALLOC_EXPORT int poolalloc_profile_sample(std::size_t mean_bytes) {
#if POOLALLOC_LINUX
  if (mean_bytes > (std::size_t{1} << 40)) {
    errno = EINVAL;
    return -1;
  }
  Heap::profile_sample(mean_bytes);
  return 0;
#else
  static_cast<void>(mean_bytes);
  errno = ENOSYS;
  return -1;
#endif
}

POOLALLOC_EXPORT int poolalloc_profile_dump(const char* path) {
#if POOLALLOC_LINUX
  return Heap::profile_dump(path);
#else
  static_cast<void>(path);
  errno = ENOSYS;
  return -1;
#endif
}

POOLALLOC_EXPORT int poolalloc_tag_register(const char* name) {
  return Heap::tag_register(name);
}

POOLALLOC_EXPORT int poolalloc_tag_push(int id) {
  return Heap::tag_push(id);
}

POOLALLOC_EXPORT int poolalloc_tag_pop() {
  return Heap::tag_pop();
}

POOLALLOC_EXPORT int poolalloc_tag_current() {
  return Heap::tag_current();
}

POOLALLOC_EXPORT int poolalloc_tag_set_budget(int id, std::uint64_t bytes,
                                              poolalloc_tag_over_budget over, void* context) {
  return Heap::tag_set_budget(id, bytes, over, context) ? 0 : -1;
}

POOLALLOC_EXPORT int poolalloc_get_tag_stats(int id, struct poolalloc_tag_stats* out) {
  if (out == nullptr || !Heap::tag_stats(id, *out)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}
