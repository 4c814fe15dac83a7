// The drop-in malloc's memory tags (poolalloc.h) as the toolkit sees them: print_budgets() shows
// a row per registered tag beside the trackers' rows, so that a game reads what it malloc'd and
// what its arenas hold in one table. The toolkit is header-only and builds without the malloc
// library (and on Windows, where there is none), so poolalloc_get_tag_stats is found at run time:
// on Linux through a weak reference, which a program linked with libpoolalloc (shared or static)
// resolves, or else through dlsym, which finds the library preloaded (LD_PRELOAD; dlsym is in
// glibc's libc from 2.34, before it in libdl). Elsewhere, and in a program running on another
// malloc, there are no tags and no rows; so too where the toolkit was installed without the
// malloc's C API (poolalloc.h). With detail/error_output.hpp, the one other file that holds what
// is platform-specific.
#pragma once

#include <cstdint>

#if __has_include("../poolalloc.h")
#include "../poolalloc.h"
#define POOLALLOC_TOOLKIT_SEES_MALLOC_TAGS 1
#else
#define POOLALLOC_TOOLKIT_SEES_MALLOC_TAGS 0
#endif

#if POOLALLOC_TOOLKIT_SEES_MALLOC_TAGS && defined(__linux__)
#include <dlfcn.h>

// Weak: a program that does not link the library links all the same, the address then null. (The
// declaration repeats poolalloc.h's to add the attribute.)
// NOLINTNEXTLINE(readability-redundant-declaration)
extern "C" [[gnu::weak]] int poolalloc_get_tag_stats(int id, struct poolalloc_tag_stats* out);
#endif

namespace poolalloc::detail {

// A tag's figures as print_budgets() shows them (poolalloc_tag_stats's).
struct MallocTagRow {
  const char* name;
  std::uint64_t live_bytes, peak_bytes;
  bool has_budget;
  std::uint64_t budget_bytes, over_budget;
};

#if POOLALLOC_TOOLKIT_SEES_MALLOC_TAGS
using TagStatsFunction = int (*)(int, poolalloc_tag_stats*);

// The malloc library's poolalloc_get_tag_stats, or nullptr when the program runs without it.
inline TagStatsFunction find_tag_stats() {
#if defined(__linux__)
  if (TagStatsFunction linked = &::poolalloc_get_tag_stats; linked != nullptr) return linked;
  return reinterpret_cast<TagStatsFunction>(dlsym(RTLD_DEFAULT, "poolalloc_get_tag_stats"));
#else
  return nullptr;
#endif
}

// Calls f(MallocTagRow) for each registered tag (ids 1 up: the untagged one is not a subsystem's),
// in id order; for none when the malloc library is not there.
template <class F>
void for_each_malloc_tag(F&& f) {
  const TagStatsFunction get = find_tag_stats();
  if (get == nullptr) return;
  poolalloc_tag_stats stats{};
  for (int id = 1; get(id, &stats) == 0; ++id)
    f(MallocTagRow{stats.name, stats.live_bytes, stats.peak_bytes,
                   stats.budget_bytes != POOLALLOC_TAG_NO_BUDGET, stats.budget_bytes,
                   stats.over_budget});
}
#else
template <class F>
void for_each_malloc_tag(F&&) {}
#endif

}  // namespace poolalloc::detail
