// Thread caches: per thread and size class, a bounded stack of free blocks. The fast path
// (fast_path.hpp) pops and pushes here without locks or atomics; the functions below are the
// slow paths, which move blocks between a bin and the central lists half a bin at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "central_lists.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {

// A bin's blocks are pointers in an array of the thread's cache, not a list through the
// blocks: malloc reads nothing from the block it returns (blocks freed in a random order would
// make a list a chain of dependent cache misses), and a write into a freed block can redirect
// no later malloc.
struct alignas(32) CacheBin {
  void** top = nullptr;        // [slots, top) are free blocks, each with its free mark; top[-1] is
                               // the block freed last
  void** end = nullptr;        // slots + limit: a free that finds top == end takes the slow path
  void** slots = nullptr;      // all nullptr in the empty cache, so that both fast paths are slow
  std::uint64_t requests = 0;  // allocations served from this bin (statistics)

  std::uint32_t count() const { return static_cast<std::uint32_t>(top - slots); }
  // The limit grows with traffic (thread_cache.cpp); only the owner reads or writes it.
  std::uint32_t limit() const { return static_cast<std::uint32_t>(end - slots); }
  void set_limit(std::uint32_t limit) { end = slots + limit; }
  void set_count(std::uint32_t count) { top = slots + count; }
};
static_assert(sizeof(CacheBin) == 32, "the fast path indexes bins with a shift");

// The most blocks a bin of class `cls` holds: a batch (central_lists.hpp). A bin that overflows
// gives back its older half; one that runs empty takes half its limit. (Two batches made sweeps
// of 16 KiB blocks 1.6 times faster, fewer central locks, but what an idle thread keeps, which
// only its owner can give back, 1.4 times larger.)
constexpr std::uint32_t bin_capacity(unsigned cls) {
  return batch_size(cls);
}

// Where each class's slots start in a cache's slot array, and how many there are in all.
inline constexpr auto kSlotOffsets = [] {
  std::array<std::uint32_t, kClassCount + 1> offsets{};
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    offsets[cls + 1] = offsets[cls] + bin_capacity(cls);
  return offsets;
}();
inline constexpr std::size_t kSlotCount = kSlotOffsets[kClassCount];

class ThreadCache {
 public:
  // The bin that serves class `cls`.
  CacheBin& bin_of_class(std::size_t cls) { return bins_[cls]; }
  const CacheBin& bin_of_class(std::size_t cls) const { return bins_[cls]; }
  // Points each bin at its share of `slots`, kSlotCount pointers that stay the cache's (a
  // cache's bins are set up once, when it is first made).
  void attach_slots(void** slots) {
    for (unsigned cls = 0; cls < kClassCount; ++cls)
      bin_of_class(cls).slots = bin_of_class(cls).top = bin_of_class(cls).end =
          &slots[kSlotOffsets[cls]];
  }

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
  CacheBin bins_[kClassCount];
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
// free mark: a double free, which is reported and aborts.
void flush_and_deallocate(unsigned cls, void* block);

// Gives all of the calling thread's cached blocks back to the central lists (malloc_trim).
void flush_thread_cache();

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
