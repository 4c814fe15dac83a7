// The memory tags' calls of both heaps (heap.hpp): the tags are the release allocator's in the
// debug build too, where a block is charged with its guard bytes (the release block under it)
// and discharged when it leaves the quarantine.
#pragma once

#include <cstdint>

#include "poolalloc/poolalloc.h"
#include "stats.hpp"
#include "tag_budgets.hpp"
#include "tag_registry.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {

struct HeapTags {
  static int tag_register(const char* name) { return register_tag(name); }
  static int tag_push(int id) { return push_tag(id); }
  static int tag_pop() { return pop_tag(); }
  static int tag_current() { return current_tag(); }
  static bool tag_stats(int id, poolalloc_tag_stats& out) { return collect_tag_stats(id, out); }
  static bool tag_set_budget(int id, std::uint64_t bytes, poolalloc_tag_over_budget over,
                             void* context) {
    return set_tag_budget(id, bytes, over, context);
  }
};

}  // namespace poolalloc::internal
