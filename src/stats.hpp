// Statistics: the table printed by POOLALLOC_STATS=1, malloc_stats() and
// poolalloc_print_stats(), and the numbers behind poolalloc_get_stats(), mallinfo2(), mallinfo()
// and malloc_info().
#pragma once

#include <cstdio>

#include "platform.hpp"
#include "poolalloc/poolalloc.h"

#if POOLALLOC_LINUX
#include <malloc.h>
#endif

namespace poolalloc::internal {

// Writes the table to fd. The thread cannot be cancelled while it prints, and a reader that
// has gone (EPIPE) ends the table instead of raising SIGPIPE.
void print_stats(int fd);
#if POOLALLOC_LINUX
// malloc_stats(): the table on stderr, then glibc's own report, of the arenas that serve what
// was forwarded to it, after the cached large blocks went back to glibc (it counts them free);
// the thread cannot be cancelled in between either.
void print_malloc_stats();
#endif
// POOLALLOC_STATS=1 at exit: the table goes to the stderr the program started with, through
// fd 2 or the copy of it taken at start-up, whichever still refers to it; never into a file
// the program opened since under either number. With POOLALLOC_STATS_FILE, it goes to that
// file, "%p" in its path replaced by the process id.
void print_stats_at_exit();
poolalloc_stats collect_stats();
// poolalloc_get_tag_stats: the figures of tag `id`; false when it is not a registered tag.
bool collect_tag_stats(int id, poolalloc_tag_stats& out);
#if POOLALLOC_LINUX
// glibc's figures, the cached large blocks counted free, with the pools' added.
struct mallinfo2 pooled_mallinfo2();
// mallinfo2's figures, each saturated at INT_MAX.
struct mallinfo pooled_mallinfo();
// glibc's malloc_info document with the pools added as one more heap and in the totals, and the
// cached large blocks counted free in glibc's main heap and in the totals.
int pooled_malloc_info(int options, FILE* stream);
#endif

}  // namespace poolalloc::internal
