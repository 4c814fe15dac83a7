// The drop-in malloc's memory tags (poolalloc.h) as the toolkit sees them: print_budgets() shows
// a row per registered tag beside the trackers' rows, so that a game reads what it malloc'd and
// what its arenas hold in one table. The toolkit is header-only and builds without the malloc
// library (and on Windows, where there is none), so poolalloc_get_tag_stats is found at run time:
// on Linux through a weak reference, which a program linked with libpoolalloc (shared or static)
// resolves, or else through dlsym, which finds the library preloaded (LD_PRELOAD; dlsym is in
// glibc's libc from 2.34, before it in libdl). Elsewhere, and in a program running on another
// malloc, there are no tags and no rows. With detail/error_output.hpp, the one other file that
// holds what is platform-specific.
#pragma once

#include "../poolalloc.h"

#if defined(__linux__)
#include <dlfcn.h>

// Weak: a program that does not link the library links all the same, the address then null.
extern "C" [[gnu::weak]] int poolalloc_get_tag_stats(int id, struct poolalloc_tag_stats* out);
#endif

namespace poolalloc::detail {

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

// Calls f(stats) for each registered tag (ids 1 up: the untagged one is not a subsystem's), in
// id order; for none when the malloc library is not there.
template <class F>
void for_each_malloc_tag(F&& f) {
  const TagStatsFunction get = find_tag_stats();
  if (get == nullptr) return;
  poolalloc_tag_stats stats{};
  for (int id = 1; get(id, &stats) == 0; ++id) f(stats);
}

}  // namespace poolalloc::detail
