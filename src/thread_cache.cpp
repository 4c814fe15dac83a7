#include "thread_cache.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>

#include "bootstrap.hpp"
#include "central_lists.hpp"
#include "decay.hpp"
#include "lock.hpp"
#include "misuse.hpp"

namespace poolalloc::internal {

constinit ThreadCache g_empty_cache;
constinit __thread ThreadCache* t_cache = &g_empty_cache;

namespace {

// A thread whose cache was flushed at exit must not get a new one: glibc would call the key's
// destructor again only a few times, then leak it. Its later calls go to the central lists.
constinit __thread bool t_exited __attribute__((tls_model("initial-exec"))) = false;

// Thread caches are carved from mappings of their own and recycled when threads exit.
constexpr std::size_t kCachesPerMapping = 64;

Lock g_registry_lock;           // third in the lock order (lock.hpp), never held with the others
ThreadCache* g_live = nullptr;  // caches of running threads
ThreadCache* g_recycled = nullptr;  // caches of exited threads, ready for new ones
std::uint64_t g_live_count = 0;
std::uint64_t g_exited_requests[kClassCount] = {};
std::atomic<std::uint64_t> g_uncached_requests[kClassCount] = {};  // from exiting threads
pthread_key_t g_exit_key;

// Bins start small and grow with traffic (as tcmalloc's do): a refill takes `limit` blocks and a
// bin that runs empty or overflows doubles its limit, up to a batch. A thread that allocates a
// few blocks of a class then holds a few, not a batch carved for it, and what an idle thread's
// lists keep (which nothing but their owner can take) stays small. Decay shrinks them again.
// Only the owner reads or writes `limit`; count <= limit always.
constexpr std::uint32_t largest_limit(unsigned cls) {
  return batch_size(cls);
}
constexpr std::uint32_t initial_limit(unsigned cls) {
  return std::max<std::uint32_t>(1, batch_size(cls) / 16);
}
void grow(unsigned cls, CacheBin& bin) {
  bin.limit = std::min(largest_limit(cls), bin.limit * 2);
}

// nullptr when no memory could be had, or, without waiting, while the registry is held for
// fork(): the thread then goes uncached for now and tries again on its next slow path.
ThreadCache* new_cache() {
  TryLockGuard guard(g_registry_lock);
  if (!guard.locked()) return nullptr;
  if (g_recycled == nullptr) {
    void* mapping = mmap(nullptr, kCachesPerMapping * sizeof(ThreadCache), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return nullptr;
    auto* caches = static_cast<ThreadCache*>(mapping);
    for (std::size_t i = 0; i < kCachesPerMapping; ++i) {
      new (&caches[i]) ThreadCache;
      caches[i].next = g_recycled;
      g_recycled = &caches[i];
    }
  }
  ThreadCache* cache = g_recycled;
  g_recycled = cache->next;
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    CacheBin& bin = cache->bin_of_class(cls);
    bin.head = nullptr;
    bin.count = 0;
    bin.limit = initial_limit(cls);
    bin.requests = 0;
    bin.parked.store(nullptr, std::memory_order_relaxed);
  }
  cache->prev = nullptr;
  // Before it joins the live list, where reap_dead_caches reads who owns it.
  cache->owner_pid = static_cast<int>(getpid());
  cache->owner_tid = static_cast<int>(gettid());
  cache->flush_epoch = g_flush_epoch.load(std::memory_order_relaxed);
  cache->clock_countdown = kSlowPathsPerClockCheck;
  std::fill(std::begin(cache->draining), std::end(cache->draining), std::uint8_t{0});
  cache->next = g_live;
  if (g_live != nullptr) g_live->prev = cache;
  g_live = cache;
  ++g_live_count;
  return cache;
}

// Waits for the registry lock even while it is held for fork(): an exiting thread's key
// destructor holds no libc lock and is never the forking thread, so the fork completes and
// the parent handler wakes it.
// Under the registry lock: takes the cache off the live list.
void unlink_live(ThreadCache* cache) {
  (cache->prev != nullptr ? cache->prev->next : g_live) = cache->next;
  if (cache->next != nullptr) cache->next->prev = cache->prev;
  --g_live_count;
}

// Under the registry lock: a cache off the live list, flushed, joins the recycled ones.
void recycle(ThreadCache* cache) {
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    g_exited_requests[cls] += cache->bin_of_class(cls).requests;
  cache->next = g_recycled;
  g_recycled = cache;
}

void retire_cache(ThreadCache* cache) {
  LockGuard guard(g_registry_lock);
  unlink_live(cache);
  recycle(cache);
}

// A parked batch is a full list at the largest limit, a batch. (Half a batch for the classes
// above 4 KiB kept idle threads' lists smaller, 59 MiB instead of 73 in trim_idle_threads_test,
// but made 16 KiB allocate/free sweeps 1.7 times slower: a central lock per block.)
BlockChain parked_chain(unsigned cls, void* head) {
  return BlockChain{head, head != nullptr ? largest_limit(cls) : 0};
}

// The bin's parked batch, taken out of it; empty when there is none (or another thread took it).
BlockChain unpark(unsigned cls, CacheBin& bin) {
  if (bin.parked.load(std::memory_order_relaxed) == nullptr) return {};
  return parked_chain(cls, bin.parked.exchange(nullptr, std::memory_order_acquire));
}

// Gives the bin's blocks back to the central lists (which keep them aside, without waiting,
// while held for fork()).
void flush_bin(unsigned cls, CacheBin& bin) {
  if (bin.count != 0) give_blocks(cls, BlockChain{bin.head, bin.count});
  if (const BlockChain parked = unpark(cls, bin); parked.count != 0) give_blocks(cls, parked);
  bin.head = nullptr;
  bin.count = 0;
}

void empty_bin_into_spans(unsigned cls, CacheBin& bin) {
  if (bin.count != 0) return_blocks_to_spans(cls, BlockChain{bin.head, bin.count});
  if (const BlockChain parked = unpark(cls, bin); parked.count != 0)
    return_blocks_to_spans(cls, parked);
  bin.head = nullptr;
  bin.count = 0;
  bin.limit = initial_limit(cls);
}

// Decay and malloc_trim moved the flush epoch on: the cache goes back into the spans, past the
// stacks of batches, so that its refills come from few spans and the spans that only scattered
// cached blocks kept alive empty. Once is not enough: the blocks the program holds at that
// moment come back to the cache, and a program that works in cycles may hold the same ones at
// every flush (its slow paths, hence the flushes, fall at the same point of each cycle). So each
// bin also empties at its next few slow paths, which fall at other points of the cycle.
constexpr std::uint8_t kDrainingSlowPaths = 4;

void empty_into_spans(ThreadCache& cache) {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    empty_bin_into_spans(cls, cache.bin_of_class(cls));
    cache.draining[cls] = kDrainingSlowPaths;
  }
}

// Every slow path of a thread with a cache starts here: a look at the clock every few calls,
// and the flushes that decay or malloc_trim asked for. A relaxed load and a few compares
// otherwise.
void housekeeping(ThreadCache& cache, unsigned cls) {
  if (--cache.clock_countdown == 0) [[unlikely]] {
    cache.clock_countdown = kSlowPathsPerClockCheck;
    decay_if_due();
  }
  const std::uint32_t epoch = g_flush_epoch.load(std::memory_order_relaxed);
  if (cache.flush_epoch != epoch) [[unlikely]] {
    cache.flush_epoch = epoch;
    empty_into_spans(cache);
  }
  if (cache.draining[cls] != 0) [[unlikely]] {
    --cache.draining[cls];
    empty_bin_into_spans(cls, cache.bin_of_class(cls));
  }
}

void on_thread_exit(void* data) {
  auto* cache = static_cast<ThreadCache*>(data);
  for (unsigned cls = 0; cls < kClassCount; ++cls) flush_bin(cls, cache->bin_of_class(cls));
  t_cache = &g_empty_cache;
  t_exited = true;
  retire_cache(cache);
}

// The calling thread's cache, created on its first allocation; nullptr for a thread that
// exited its cache already, or when the pools are unavailable.
ThreadCache* own_cache() {
  if (t_cache != &g_empty_cache) return t_cache;
  if (t_exited || !ensure_initialised()) return nullptr;
  ThreadCache* cache = new_cache();
  if (cache == nullptr) return nullptr;
  t_cache = cache;
  // Registers the exit flush. For keys past the first 32 glibc allocates here; the cache is
  // already in place to serve that allocation.
  pthread_setspecific(g_exit_key, cache);
  return cache;
}

}  // namespace

void init_thread_caches() {
  pthread_key_create(&g_exit_key, on_thread_exit);
}

void* refill_and_allocate(unsigned cls) {
  ThreadCache* cache = own_cache();
  if (cache == nullptr) {
    BlockChain batch = take_blocks(cls);
    if (batch.count == 0) return nullptr;
    void* block = batch.pop(cls);
    if (batch.count != 0) give_blocks(cls, batch);
    g_uncached_requests[cls].fetch_add(1, std::memory_order_relaxed);
    clear_mark(block);
    return block;
  }
  housekeeping(*cache, cls);
  CacheBin& bin = cache->bin_of_class(cls);
  BlockChain chain = unpark(cls, bin);
  if (chain.count == 0) {
    chain = take_some_blocks(cls, bin.limit);
    grow(cls, bin);
  }
  if (chain.count == 0) return nullptr;
  void* block = chain.pop(cls);
  bin.head = chain.head;
  bin.count = chain.count;
  ++bin.requests;
  clear_mark(block);
  return block;
}

// While the central lists are held for fork(), a full bin keeps its blocks beyond its limit
// (nothing waits); the list then holds more than `limit` blocks, and the next free that finds
// it so hands the whole list to the central lists (the parked batch holds exactly `limit`).
void flush_and_deallocate(unsigned cls, void* block) {
  if (cls >= kClassCount) report_invalid_pointer("free", block);
  if (is_marked_free(block)) report_double_free("free", block, cls);
  const int saved_errno = errno;  // free() preserves errno; flushing may madvise
  ThreadCache* cache = own_cache();
  if (cache == nullptr) {
    BlockChain one;
    one.push(block);
    give_blocks(cls, one);
  } else {
    housekeeping(*cache, cls);
    CacheBin& bin = cache->bin_of_class(cls);
    if (bin.count == bin.limit && bin.limit < largest_limit(cls)) {
      grow(cls, bin);
    } else if (bin.count == bin.limit) {
      const BlockChain before =
          parked_chain(cls, bin.parked.exchange(bin.head, std::memory_order_acq_rel));
      if (before.count != 0) give_blocks(cls, before);
      bin.head = nullptr;
      bin.count = 0;
    }
    mark_free(block, bin.head);
    bin.head = block;
    ++bin.count;
  }
  errno = saved_errno;
}

void report_corrupted_cache_list(const CacheBin* bin, const void* block) {
  report_corrupted_free_list(block, static_cast<unsigned>(bin - &t_cache->bin_of_class(0)));
}

void flush_thread_cache() {
  if (t_cache == &g_empty_cache) return;
  for (unsigned cls = 0; cls < kClassCount; ++cls) flush_bin(cls, t_cache->bin_of_class(cls));
}

// Decay and malloc_trim take the parked batches of every live cache. give_blocks takes a class
// lock, which must not be taken under the registry lock (fork takes them in the other order), so
// the batches are collected a few at a time and given once the registry lock is dropped. Skipped,
// without waiting, while the registry is held for fork().
void take_parked_batches() {
  struct Taken {
    unsigned cls;
    void* head;
  };
  Taken taken[64];
  for (bool more = true; more;) {
    std::size_t count = 0;
    {
      TryLockGuard guard(g_registry_lock);
      if (!guard.locked()) return;
      more = [&] {
        for (ThreadCache* cache = g_live; cache != nullptr; cache = cache->next) {
          for (unsigned cls = 0; cls < kClassCount; ++cls) {
            const BlockChain batch = unpark(cls, cache->bin_of_class(cls));
            if (batch.count == 0) continue;
            taken[count++] = {cls, batch.head};
            if (count == std::size(taken)) return true;
          }
        }
        return false;
      }();
    }
    for (std::size_t i = 0; i < count; ++i)
      give_blocks(taken[i].cls, parked_chain(taken[i].cls, taken[i].head));
  }
}

// Held for fork(), the registry cannot change: it is read as it is. (The forking thread
// itself may be asking, from another library's fork handler.)
// A cache is its thread's alone until the kernel says the thread is gone (tgkill with signal 0
// fails with ESRCH only once the task has exited); nothing can touch it after that. Caches made
// in a parent process are left alone: fork may have stopped their thread in the middle of its
// fast path, with its bin torn. Skipped while the registry is held for fork(); a dead cache
// flushed then stays off both lists (its few kilobytes are not reused).
void reap_dead_caches() {
  const int saved_errno = errno;
  const int pid = static_cast<int>(getpid());
  ThreadCache* dead = nullptr;
  {
    TryLockGuard guard(g_registry_lock);
    if (!guard.locked()) return;
    for (ThreadCache* cache = g_live; cache != nullptr;) {
      ThreadCache* next = cache->next;
      if (cache->owner_pid == pid && syscall(SYS_tgkill, pid, cache->owner_tid, 0) != 0 &&
          errno == ESRCH) {
        unlink_live(cache);
        cache->next = dead;
        dead = cache;
      }
      cache = next;
    }
  }
  while (dead != nullptr) {
    ThreadCache* next = dead->next;
    for (unsigned cls = 0; cls < kClassCount; ++cls) flush_bin(cls, dead->bin_of_class(cls));
    TryLockGuard guard(g_registry_lock);
    if (guard.locked()) recycle(dead);
    dead = next;
  }
  errno = saved_errno;
}

ClassUsage class_usage(unsigned cls) {
  TryLockGuard guard(g_registry_lock);
  ClassUsage usage{g_exited_requests[cls] + g_uncached_requests[cls].load(), 0};
  for (ThreadCache* cache = g_live; cache != nullptr; cache = cache->next) {
    const CacheBin& bin = cache->bin_of_class(cls);
    usage.requests += bin.requests;
    usage.cached += bin.count + parked_chain(cls, bin.parked.load(std::memory_order_relaxed)).count;
  }
  return usage;
}

std::uint64_t live_thread_caches() {
  TryLockGuard guard(g_registry_lock);
  return g_live_count;
}

void lock_thread_caches_for_fork() {
  g_registry_lock.lock_for_fork();
}
void unlock_thread_caches_after_fork(bool in_child) {
  g_registry_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
