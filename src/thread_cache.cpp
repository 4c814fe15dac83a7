#include "thread_cache.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>

#include "bootstrap.hpp"
#include "central_lists.hpp"
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
  *cache = ThreadCache{};
  for (unsigned cls = 0; cls < kClassCount; ++cls) cache->bin_of_class(cls).limit = batch_size(cls);
  cache->next = g_live;
  if (g_live != nullptr) g_live->prev = cache;
  g_live = cache;
  ++g_live_count;
  return cache;
}

// Waits for the registry lock even while it is held for fork(): an exiting thread's key
// destructor holds no libc lock and is never the forking thread, so the fork completes and
// the parent handler wakes it.
void retire_cache(ThreadCache* cache) {
  LockGuard guard(g_registry_lock);
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    g_exited_requests[cls] += cache->bin_of_class(cls).requests;
  (cache->prev != nullptr ? cache->prev->next : g_live) = cache->next;
  if (cache->next != nullptr) cache->next->prev = cache->prev;
  --g_live_count;
  cache->next = g_recycled;
  g_recycled = cache;
}

// Gives the bin's blocks back to the central lists (which keep them aside, without waiting,
// while held for fork()).
void flush_bin(unsigned cls, CacheBin& bin) {
  if (bin.count != 0) give_blocks(cls, BlockChain{bin.head, bin.count});
  if (bin.parked != nullptr) give_blocks(cls, BlockChain{bin.parked, bin.limit});
  bin.head = bin.parked = nullptr;
  bin.count = 0;
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
  CacheBin& bin = cache->bin_of_class(cls);
  BlockChain chain{bin.parked, bin.parked != nullptr ? bin.limit : 0};
  bin.parked = nullptr;
  if (chain.count == 0) chain = take_blocks(cls);
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
    CacheBin& bin = cache->bin_of_class(cls);
    if (bin.count > bin.limit) {
      if (try_give_blocks(cls, BlockChain{bin.head, bin.count})) {
        bin.head = nullptr;
        bin.count = 0;
      }
    } else if (bin.count == bin.limit &&
               (bin.parked == nullptr || try_give_blocks(cls, BlockChain{bin.parked, bin.limit}))) {
      bin.parked = bin.head;
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

// Held for fork(), the registry cannot change: it is read as it is. (The forking thread
// itself may be asking, from another library's fork handler.)
ClassUsage class_usage(unsigned cls) {
  TryLockGuard guard(g_registry_lock);
  ClassUsage usage{g_exited_requests[cls] + g_uncached_requests[cls].load(), 0};
  for (ThreadCache* cache = g_live; cache != nullptr; cache = cache->next) {
    const CacheBin& bin = cache->bin_of_class(cls);
    usage.requests += bin.requests;
    usage.cached += bin.count + (bin.parked != nullptr ? bin.limit : 0);
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
