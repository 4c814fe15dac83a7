// Thread caches: per thread and size class, a bounded stack of free blocks. The fast path
// (fast_path.hpp) pops and pushes here without locks or atomics; the functions below are the
// slow paths, which move whole batches between a bin and the central lists in O(1).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "size_classes.hpp"

namespace poolalloc::internal {

struct CacheBin {
  void* head = nullptr;        // free blocks, linked and marked as free_block_marks.hpp says
  std::uint32_t count = 0;     // blocks in that list
  std::uint32_t limit = 0;     // grows with traffic (thread_cache.cpp); 0 in the empty cache, so
                               // that every free there is slow
  std::uint64_t requests = 0;  // allocations served from this bin (statistics)
  // A full list at the largest limit parked beside the list, or nullptr: a full list becomes the
  // parked batch (the one parked before goes to the central lists) and an empty list takes it,
  // so the bin never walks a chain. Only slow paths touch it, always with an atomic exchange, so
  // that malloc_trim and decay in other threads can take it (take_parked_batches).
  std::atomic<void*> parked = nullptr;
};
static_assert(sizeof(CacheBin) == 32, "the fast path indexes bins with a shift");

class ThreadCache {
 public:
  // The bin that serves class `cls`.
  CacheBin& bin_of_class(std::size_t cls) { return bins_[cls + 1]; }
  const CacheBin& bin_of_class(std::size_t cls) const { return bins_[cls + 1]; }
  // The bin named by a span's class byte (the class plus one, 0 for a span that serves no
  // class): the free fast path indexes with it directly.
  CacheBin& bin_of_span_byte(unsigned span_byte) { return bins_[span_byte]; }

  ThreadCache* next = nullptr;  // in the registry of live caches
  ThreadCache* prev = nullptr;
  // Slow-path housekeeping (decay.hpp): the flush epoch this cache last emptied itself at, how
  // many slow paths remain before the next look at the clock, and per class how many more slow
  // paths empty the bin into the spans after that (see empty_into_spans).
  std::uint32_t flush_epoch = 0;
  std::uint32_t clock_countdown = 0;
  std::uint8_t draining[kClassCount] = {};
  // The process and kernel thread that own the cache (reap_dead_caches).
  int owner_pid = 0;
  int owner_tid = 0;

 private:
  // bins_[cls + 1] serves class cls. bins_[0] stays empty with limit 0, so that a pointer into a
  // span that serves no class costs no test on the free fast path and simply lands in the slow
  // path. Only the two accessors above index it.
  CacheBin bins_[kClassCount + 1];
};

// What t_cache points to before a thread's first allocation and after its exit: all bins
// empty with limit 0, so both fast paths fall through to the slow path, which creates the
// thread's cache (or, in an exiting thread, goes to the central lists directly).
extern ThreadCache g_empty_cache;

// One pointer of initial-exec TLS: no __tls_get_addr call (which may itself malloc) and no
// TLS wrapper function, whichever way the library is loaded or linked.
extern __thread ThreadCache* t_cache __attribute__((tls_model("initial-exec")));

// Slow path of allocation: the bin is empty. Refills it and returns a block, or nullptr when
// the pools cannot serve the class (the caller then forwards to the system allocator).
void* refill_and_allocate(unsigned cls);

// Slow path of free: the bin is full (or this thread has no cache yet), or the block carries its
// free mark. A `cls` of kClassCount or more (a pointer into a span that serves no class) and a
// double free are reported and abort.
void flush_and_deallocate(unsigned cls, void* block);

// The fast path found `block`, the head of `bin` of the calling thread's cache, without its free
// mark: reports the corrupted free list of the bin's class and aborts.
[[noreturn]] void report_corrupted_cache_list(const CacheBin* bin, const void* block);

// Gives all of the calling thread's cached blocks back to the central lists (malloc_trim).
void flush_thread_cache();

// Gives the parked batch of every live thread's cache back to the central lists (malloc_trim,
// decay). The lists themselves stay: only their owners may touch them.
void take_parked_batches();

// Decay and malloc_trim: flushes and recycles the caches of threads that are gone without their
// exit flush (a thread whose first allocation came in the last round of pthread key
// destructors, after which glibc calls ours no more).
void reap_dead_caches();

// Sets up thread-exit handling; called once during initialisation.
void init_thread_caches();

// Statistics of one class over live and exited threads: allocations served, and blocks
// sitting free in thread caches.
struct ClassUsage {
  std::uint64_t requests;
  std::uint64_t cached;
};
ClassUsage class_usage(unsigned cls);
std::uint64_t live_thread_caches();

void lock_thread_caches_for_fork();
void unlock_thread_caches_after_fork(bool in_child);

}  // namespace poolalloc::internal
