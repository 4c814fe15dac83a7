// Statistics: the table printed by POOLALLOC_STATS=1, malloc_stats() and
// poolalloc_print_stats(), and the numbers behind poolalloc_get_stats() and mallinfo2().
#pragma once

#include <malloc.h>

#include "poolalloc/poolalloc.h"

namespace poolalloc::internal {

void print_stats(int fd);
poolalloc_stats collect_stats();
struct mallinfo2 pooled_mallinfo2();

}  // namespace poolalloc::internal
