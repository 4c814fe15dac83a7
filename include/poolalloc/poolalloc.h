/* poolalloc: the drop-in malloc's own API, for programs that link libpoolalloc or want to ask
 * the preloaded library about itself. The standard C and C++ allocation functions are the rest
 * of the API; they are declared by <stdlib.h>, <malloc.h> and <new>. */
#ifndef POOLALLOC_POOLALLOC_H
#define POOLALLOC_POOLALLOC_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header. CMakeLists.txt takes the project's version from these lines. */
#define POOLALLOC_VERSION_MAJOR 0
#define POOLALLOC_VERSION_MINOR 2
#define POOLALLOC_VERSION_PATCH 0
#define POOLALLOC_VERSION_STRING "0.2.0"

#ifdef __cplusplus
extern "C" {
#endif

/* The allocation functions under poolalloc's names, for an engine that routes its own allocator
 * interface to poolalloc: on Linux the same functions as malloc, calloc, free, realloc,
 * aligned_alloc and malloc_usable_size, with glibc's semantics; on Windows, where the C runtime
 * keeps its malloc, the way in to the pools from C (docs/windows.md). A block from any of them
 * may be given to any other, and to operator delete; poolalloc_free and poolalloc_realloc also
 * take the blocks of the C runtime's malloc (strdup's, on Windows too). poolalloc_calloc returns
 * count * size zeroed bytes, or NULL with errno ENOMEM when the product overflows. */
void* poolalloc_malloc(size_t size);
void* poolalloc_calloc(size_t count, size_t size);
void poolalloc_free(void* p);
void* poolalloc_realloc(void* p, size_t size);
void* poolalloc_aligned_alloc(size_t alignment, size_t size);
size_t poolalloc_usable_size(void* p);

/* The version of the library the program runs with, such as "0.2.0": the
 * POOLALLOC_VERSION_STRING it was built from, which may differ from the header's. */
const char* poolalloc_version(void);

/* Nonzero when p is a live or free block served by the pools (not by the system allocator). */
int poolalloc_owns(const void* p);

/* Writes the statistics table (the one POOLALLOC_STATS=1 prints at exit) to fd. */
void poolalloc_print_stats(int fd);

/* Totals over all size classes. Counters are read without stopping other threads, so
 * they are a consistent snapshot only when no other thread allocates. */
struct poolalloc_stats {
  uint64_t pooled_requests; /* allocations served by the pools */
  uint64_t pooled_frees;    /* blocks given back to the pools */
  uint64_t pooled_live;     /* pooled_requests - pooled_frees */
  uint64_t pooled_peak;     /* most blocks out of their spans at once (live plus thread-cached) */
  uint64_t spans_in_use;    /* spans carved for a size class */
  uint64_t bytes_held;      /* bytes of the spans that belong to a size class now (the
                             * retained empty spans are not among them: retained_bytes) */
  uint64_t system_requests; /* allocations forwarded to the system allocator */
  uint64_t system_bytes;    /* bytes requested by those allocations */
  uint64_t thread_caches;   /* thread caches in use */
  uint64_t resident_bytes;  /* resident pages of every span carved so far, in a class or
                             * retained empty (what RSS the pools cost) */
  uint64_t retained_bytes;  /* bytes of the empty spans kept committed for reuse (given back
                             * by malloc_trim and by decay); most of them are resident */
};

/* Fills *stats; returns 0, or -1 when stats is NULL. */
int poolalloc_get_stats(struct poolalloc_stats* stats);

/* The heap profile (docs/profiling.md), Linux only (on Windows both return -1 with errno ENOSYS):
 * a sample of the allocations, one in about every
 * mean_bytes bytes allocated, with their call stacks, written in pprof's format.
 * poolalloc_profile_sample sets the mean and turns sampling on, or off with 0 (off by default;
 * POOLALLOC_PROFILE=1 starts it at POOLALLOC_PROFILE_SAMPLE, 512 KiB by default): for the
 * calling thread at once, for the others within a few thousand of their calls. Returns 0, or -1
 * with errno EINVAL for a mean above 1 TiB. */
int poolalloc_profile_sample(size_t mean_bytes);

/* Writes the heap profile to path (NULL: POOLALLOC_PROFILE_PREFIX, "poolalloc" in the directory
 * the program started in by default, then ".<pid>.<n>.dump.pb"). Safe from any thread while
 * others allocate, and from a signal handler. Returns 0, or -1 with errno: the file could not be
 * written, or EAGAIN during a fork() or in a handler of a signal that interrupted the profile's
 * own bookkeeping in its thread (a sampled malloc or free; in the debug build, any malloc or
 * free): the dump would wait for that thread, itself; a later call, out of the handler, writes
 * it. */
int poolalloc_profile_dump(const char* path);

/* Memory tags: what each subsystem of a program has allocated, exactly. Register a name once,
 * push its id while a subsystem runs (a per-thread stack, 64 deep; a job system pushes a job's
 * tag on the worker for the length of the job) and pop it after: every allocation is charged to
 * the tag current in the thread at its malloc (calloc, realloc, aligned forms, operator new), and
 * its free, from any thread, discharges that same tag. A realloc that moves a block charges the
 * new block to the tag current at the realloc; one that keeps it in place keeps its tag (a block
 * above the pools is then counted at the new size). A thread that exits leaves its stack behind;
 * its next thread starts untagged. */
#define POOLALLOC_TAG_UNTAGGED 0

/* The id (1 to 255) of `name`, registering it if it is new: a name registered again gets the
 * same id ("untagged", the name of POOLALLOC_TAG_UNTAGGED, gets 0). The name is copied. -1 with
 * errno EINVAL (NULL, empty or longer than 63 bytes), ENOSPC (255 tags exist), ENOMEM or EAGAIN
 * (called by the forking thread inside fork(), from a fork handler, while the process has other
 * threads; a process of one thread takes no lock for fork, as glibc's malloc, and the call
 * succeeds). Called by another thread while a fork runs, it waits for the fork to end. */
int poolalloc_tag_register(const char* name);
/* Makes `id` (a registered tag, or POOLALLOC_TAG_UNTAGGED) the calling thread's current tag: 0,
 * or -1 with errno EINVAL (not a registered id; nothing changes), EOVERFLOW (64 tags pushed
 * already; nothing changes) or ENOMEM (the thread's first call found no memory for its stack, or
 * the thread's exit gave its cache, where the stack lives, back already: on Windows, a call from
 * the destructor of a thread_local object of a thread of CreateThread or _beginthreadex, or of
 * one ended by ExitThread or _endthreadex; a first call while another thread forks waits for
 * the fork to end). */
int poolalloc_tag_push(int id);
/* Ends the current tag: the tag pushed before it is current again. The id popped, or -1 with
 * errno EINVAL when nothing is pushed (nothing changes). */
int poolalloc_tag_pop(void);
/* The calling thread's current tag: POOLALLOC_TAG_UNTAGGED when nothing is pushed. */
int poolalloc_tag_current(void);

/* A tag's figures. Exact while no other thread allocates or frees (as poolalloc_stats; while
 * others do, a figure may be off by what they did while it was read). live_bytes counts a pooled
 * block (up to 32 KiB) at its size class, what malloc_usable_size says of it (no block has a
 * header to keep the size asked for), and a larger block at the size asked for. The
 * untagged figures count pooled blocks only (larger untagged blocks are system_bytes of
 * poolalloc_stats). peak_bytes is the most bytes the tag had out of its spans at once: its live
 * blocks, plus its free pooled blocks that waited in thread caches and central stacks then, those
 * freed and those a refill took into a thread cache before malloc handed them out (at least the
 * live peak, above it by what waited: one malloc(16) under a new tag shows 128). */
struct poolalloc_tag_stats {
  uint64_t live_bytes;
  uint64_t live_blocks;
  uint64_t peak_bytes;
  const char* name;      /* the registered name ("untagged" for 0), valid for the process's life */
  uint64_t budget_bytes; /* the tag's budget: POOLALLOC_TAG_NO_BUDGET when it has none */
  uint64_t over_budget;  /* how many times the tag went over its budget */
};
/* Fills *out with the figures of tag `id`: 0, or -1 with errno EINVAL (out NULL, or not a
 * registered id). */
int poolalloc_get_tag_stats(int id, struct poolalloc_tag_stats* out);

/* A tag's budget: `over` is called when the tag goes over `bytes`, once each time it goes over.
 * What is compared with the budget is what the tag has out, as peak_bytes counts it: its live
 * blocks plus its freed pooled blocks that wait in thread caches and central stacks. It moves a
 * refill of a thread's bin at a time (up to half the bin's capacity: 64 KiB at most) and a
 * block above the pools at a time, so the tag goes over at the refill or the large malloc
 * that takes it there, and comes back under when the blocks waiting for it go back to their
 * spans or a large block is freed. A budget set below what the tag has out counts as going over,
 * unless the tag was over its budget before already.
 *
 * `over` runs in the thread whose malloc took the tag over (or another thread's malloc that
 * comes first), inside that malloc, after it left the allocator's locks and before it returns.
 * It may allocate and free, read the tags' figures, set budgets and write its log; a tag that
 * goes over during the call (in the same thread) has its call after this one returns, in the
 * same malloc or a later one. It must return: no longjmp, no exception through it (a C++
 * callback is noexcept). `over` may be NULL: the crossings are then only counted (over_budget).
 *
 * bytes POOLALLOC_TAG_NO_BUDGET removes the budget. Returns 0, or -1 with errno EINVAL (not a
 * registered id) or EAGAIN (from a fork handler while fork() runs in a process of more than one
 * thread); nothing changes then. */
#define POOLALLOC_TAG_NO_BUDGET UINT64_MAX
/* NOLINTNEXTLINE(modernize-use-using): a C header */
typedef void (*poolalloc_tag_over_budget)(int id, uint64_t out_bytes, uint64_t budget_bytes,
                                          void* context);
int poolalloc_tag_set_budget(int id, uint64_t bytes, poolalloc_tag_over_budget over, void* context);

#ifdef __cplusplus
}
#endif

#endif /* POOLALLOC_POOLALLOC_H */
