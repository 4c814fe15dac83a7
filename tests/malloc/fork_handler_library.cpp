// A shared library that registers fork handlers which allocate, from its constructor: it is
// linked by the test program after the allocator, so the dynamic loader initialises it before
// the allocator's own constructor, and its handlers are registered before the allocator's.
// Prepare handlers run in reverse order of registration (the allocator's first), child
// handlers in order of registration (this library's first).
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cstdint>

#include "poolalloc/poolalloc.h"

// Weak: the library must not depend on the allocator, or the loader would initialise the
// allocator first.
extern "C" int poolalloc_get_stats(struct poolalloc_stats* stats) __attribute__((weak));
extern "C" int poolalloc_owns(const void* p) __attribute__((weak));

namespace {

bool g_prepare_allocates = false;
bool g_child_allocates = false;
void* g_prepared = nullptr;  // the block the last prepare handler allocated
int g_first_prepare_pooled = -1;
bool g_constructor_ran = false;
std::uint64_t g_caches_at_constructor = UINT64_MAX;
std::uint64_t g_requests_at_constructor = UINT64_MAX;
void (*g_prepare_call)() = nullptr;
void (*g_parent_call)() = nullptr;
void (*g_child_call)() = nullptr;

// A size class nothing else in the test uses: each fork's first allocation of it in a thread
// misses the thread cache and refills from the shared lists (a lock).
constexpr size_t kPrepareSize = 3000;
constexpr size_t kChildSize = 6000;

void prepare() {
  if (g_prepare_call != nullptr) g_prepare_call();
  if (!g_prepare_allocates) return;
  g_prepared = malloc(kPrepareSize);
  if (g_prepared == nullptr) abort();
  memset(g_prepared, 0x11, kPrepareSize);
  if (g_first_prepare_pooled < 0 && poolalloc_owns != nullptr)
    g_first_prepare_pooled = poolalloc_owns(g_prepared);
}

void parent() {
  if (g_parent_call != nullptr) g_parent_call();
  free(g_prepared);
  g_prepared = nullptr;
}

void child() {
  if (g_child_call != nullptr) g_child_call();
  free(g_prepared);
  g_prepared = nullptr;
  if (!g_child_allocates) return;
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    blocks[i] = malloc(i % 2 == 0 ? kChildSize : kPrepareSize + static_cast<size_t>(i));
    if (blocks[i] == nullptr) abort();
    memset(blocks[i], i, 16);
  }
  for (void* p : blocks) free(p);
}

__attribute__((constructor)) void register_handlers() {
  g_constructor_ran = true;
  if (poolalloc_get_stats != nullptr) {
    poolalloc_stats stats{};
    poolalloc_get_stats(&stats);
    g_caches_at_constructor = stats.thread_caches;
    g_requests_at_constructor = stats.pooled_requests;
  }
  pthread_atfork(prepare, parent, child);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void fork_handlers_allocate(bool in_prepare,
                                                                              bool in_child) {
  g_prepare_allocates = in_prepare;
  g_child_allocates = in_child;
}

// Functions the handlers call first (nullptr: none), for tests that choose what they do.
extern "C" __attribute__((visibility("default"))) void fork_handlers_call(void (*prepare)(),
                                                                          void (*parent)(),
                                                                          void (*child)()) {
  g_prepare_call = prepare;
  g_parent_call = parent;
  g_child_call = child;
}

// True when the constructor ran before the allocator had served a pooled request or created
// a thread cache: the allocator registered its fork handlers after these.
extern "C" __attribute__((visibility("default"))) bool fork_handlers_registered_first() {
  return g_constructor_ran && g_caches_at_constructor == 0 && g_requests_at_constructor == 0;
}

// Whether the first prepare handler's block came from the pools (1), not (0), or unknown (-1).
// The allocator's prepare handler ran first if it did not: that fork's pooled requests went to
// the system allocator.
extern "C" __attribute__((visibility("default"))) int fork_handlers_first_prepare_pooled() {
  return g_first_prepare_pooled;
}
