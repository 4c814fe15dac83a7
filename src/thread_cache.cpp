#include "thread_cache.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>

#include "bootstrap.hpp"
#include "central_lists.hpp"
#include "free_block_marks.hpp"
#include "intrusive_list.hpp"
#include "lock.hpp"
#include "misuse.hpp"
#include "os.hpp"
#include "platform.hpp"
#include "sample_distance.hpp"
#include "span_carving.hpp"
#include "tag_budgets.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {

constinit ThreadCache g_empty_cache;
constinit POOLALLOC_THREAD_WORD(ThreadCache*) t_cache{&g_empty_cache};
#if POOLALLOC_LINUX
constinit POOLALLOC_THREAD_LOCAL std::uint32_t t_own_allocations = 0;
#endif

namespace {

// The thread's exit flush ran: it makes no cache again. glibc would call the key's destructor
// again only a few times, then leak the cache; Windows calls the slot's callback no more.
constinit POOLALLOC_THREAD_WORD(bool) t_exited{false};
// Set when a thread's cache pointer could not be stored (on Windows: no TLS index was left at
// the first allocation): every thread goes uncached from then on.
constinit std::atomic<bool> g_without_caches{false};

// Thread caches are carved from mappings of their own and recycled when threads exit. Each is
// followed by its untagged bins' slots (TagBins), about 72 KiB of address space of which a
// thread touches the first slots' pages and those of the classes whose bins grew; the bins of
// every tag, in the cache, are 576 KiB of address space, of which it touches the pages of the
// tags it uses.
constexpr std::size_t kCachesPerMapping = 8;
constexpr std::size_t kCacheStride = (sizeof(ThreadCache) + sizeof(TagBins) + 63) & ~63;

Lock g_reclaim_lock;                // first in the lock order (lock.hpp): one reclaim at a time
Lock g_registry_lock;               // second in the lock order, never held with the central locks
ThreadCache* g_live = nullptr;      // caches of running threads
ThreadCache* g_recycled = nullptr;  // caches of exited threads, ready for new ones
// Of the recycled caches, how many kept their slot pages (ThreadCache::slot_pages_kept).
std::size_t g_recycled_with_slot_pages = 0;
std::uint64_t g_live_count = 0;
std::uint64_t g_exited_requests[kBinCount] = {};
// From exiting threads, and from threads that could have no slots for their tag's bins.
std::atomic<std::uint64_t> g_uncached_requests[kBinCount] = {};
// In a child of fork(): the blocks left in the bins of the parent's other threads, which no
// thread will take again. They were freed: the statistics count them as cached, not live.
std::uint64_t g_abandoned[kBinCount] = {};

// Whether bin `bin` of the cache has slots (its tag's TagBins); a bin without is all nullptr.
bool has_slots(const ThreadCache& cache, unsigned bin) {
  return CacheBins::tag_bins(cache, bin_tag(bin)) != nullptr;
}

// The owner's slow path, its bin settled: the bin's limit is `limit` (no fewer than its count), its
// blocks moved to the home of that limit (CacheBins::home_for) when it is not where they are.
void set_limit(ThreadCache& cache, unsigned bin_index, std::uint32_t limit) {
  CacheBin& bin = CacheBins::of(cache, bin_index);
  void** const home = CacheBins::home_for(cache, bin_index, limit);
  if (home != bin.bottom_slot()) {
    bin.top.store(std::copy(bin.bottom_slot(), bin.top_slot(), home), std::memory_order_relaxed);
    bin.bottom.store(home, std::memory_order_relaxed);
  }
  bin.end = home + limit;
}

// Whether a full bin `bin` gives its older half back into the spans, past its central stack: a
// tag's bin does while two or more tags are registered. Its blocks then wait in their spans'
// bitmaps, whose pages the spans have already, where a stack's pointers take pages of their own
// for each tag that frees blocks of a class in bulk (a game's four tags wrote 19 pages of stacks
// by a peak that no decay step preceded, and its peak was 20 pages lower without them). Its
// refills then carve from the spans' bitmaps where they copied from a stack. A program that
// pushes one tag, registering one, gives to the stacks as an untagged one does.
bool gives_back_into_spans(unsigned bin) {
  return bin_tag(bin) != 0 && registered_tags() > 2;
}

void grow(ThreadCache& cache, unsigned bin_index) {
  set_limit(
      cache, bin_index,
      std::min(bin_capacity(bin_class(bin_index)), CacheBins::of(cache, bin_index).limit() * 2));
}

// The bins of tag `tag`, whose TagBins the cache has, empty at their homes with their initial
// limits, and nothing counted.
void init_tag_bins(ThreadCache& cache, unsigned tag) {
  for (unsigned bin = bin_of(tag, 0); bin < bin_of(tag + 1, 0); ++bin) {
    CacheBin& cache_bin = CacheBins::of(cache, bin);
    const std::uint32_t limit = initial_limit(bin_class(bin));
    void** const home = CacheBins::home_for(cache, bin, limit);
    cache_bin.bottom.store(home, std::memory_order_relaxed);
    cache_bin.top.store(home, std::memory_order_relaxed);
    cache_bin.end = home + limit;
    cache_bin.requests.store(0, std::memory_order_relaxed);
  }
  std::fill(std::begin(CacheBins::tag_bins(cache, tag)->draining),
            std::end(CacheBins::tag_bins(cache, tag)->draining), std::uint8_t{0});
}

// Whether the bins of `bin`'s tag have slots in the cache, which get them here on the thread's
// first malloc or free of a block of the tag (a mapping of their own, kept with the cache when
// it is recycled); false when no memory could be had. The owner's slow paths, before they lock.
bool tag_bins_ready(ThreadCache& cache, unsigned bin) {
  const unsigned tag = bin_tag(bin);
  if (CacheBins::tag_bins(cache, tag) != nullptr) [[likely]]
    return true;
  void* mapping = os_map(sizeof(TagBins));
  if (mapping == nullptr) return false;
  LockGuard guard(cache.lock);  // a reclaimer reads the tag's bins under it
  CacheBins::attach_tag_bins(cache, tag, new (mapping) TagBins);
  init_tag_bins(cache, tag);
  return true;
}

// nullptr when no memory could be had, or, without waiting, while the registry is held for
// fork(): the thread then goes uncached for now and tries again on its next slow path. With
// `wait_for_fork`, it waits for the fork to end instead (push_tag).
ThreadCache* new_cache(bool wait_for_fork) {
  // Two system calls (glibc 2.36 caches neither), made before the registry lock rather than
  // under it: a program that starts and ends threads at a high rate (mimalloc-bench's mleak)
  // otherwise has them wait for each other's calls, and sleep on the futex.
  const int pid = os_process_id();
  const int tid = os_thread_id();
  TryLockGuard guard(g_registry_lock, wait_for_fork);
  if (!guard.locked()) return nullptr;
  if (g_recycled == nullptr) {
    void* mapping = os_map(kCachesPerMapping * kCacheStride);
    if (mapping == nullptr) return nullptr;
    for (std::size_t i = 0; i < kCachesPerMapping; ++i) {
      std::byte* at = static_cast<std::byte*>(mapping) + i * kCacheStride;
      auto* cache = new (at) ThreadCache;
      CacheBins::attach_tag_bins(*cache, 0, new (at + sizeof(ThreadCache)) TagBins);
      list_push(g_recycled, *cache);
    }
  }
  ThreadCache* cache = list_pop(g_recycled);
  if (cache->slot_pages_kept) {
    cache->slot_pages_kept = false;
    --g_recycled_with_slot_pages;
  }
  // The tags whose bins the cache's last thread used keep their slots, empty.
  for (unsigned tag = 0, tags = registered_tags(); tag < tags; ++tag)
    if (CacheBins::tag_bins(*cache, tag) != nullptr) init_tag_bins(*cache, tag);
  CacheBins::tag_depth(*cache) = 0;  // untagged, whatever its last thread left pushed
  CacheBins::tag_offset(*cache) = 0;
  cache->reclaimed = false;
  // Before it joins the live list, where reap_dead_caches reads who owns it.
  cache->owner_pid = pid;
  cache->owner_tid = tid;
  cache->flush_epoch.store(g_flush_epoch.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  cache->clock_countdown = kSlowPathsPerClockCheck;
  cache->clock_look = new_clock_look();
  CacheBins::calls_before_clock(*cache) = kSlowPathsPerClockCheck;
  // The first malloc's slow path draws the distance to the first sample (count_malloc_bytes).
  CacheBins::malloc_bytes_before_slow_path(*cache) = 0;
  cache->malloc_bytes_set = 0;
  cache->bytes_to_sample = 0;
  cache->bytes_to_clock = kSlowPathsPerClockCheck * kMallocBytesPerClockCall;
  cache->clock_look_due = false;
  cache->sample_settings = 0;
  cache->bins_left_to_empty = 0;
  dlist_push(g_live, *cache);
  ++g_live_count;
  return cache;
}

// Waits for the registry lock even while it is held for fork(): an exiting thread's key
// destructor holds no libc lock and is never the forking thread, so the fork completes and
// the parent handler wakes it.
// Under the registry lock: takes the cache off the live list.
void unlink_live(ThreadCache* cache) {
  dlist_unlink(g_live, *cache);
  --g_live_count;
}

// Under the registry lock: a cache off the live list, flushed, joins the recycled ones.
void recycle(ThreadCache* cache) {
  for (unsigned bin = 0, bins = registered_bins(); bin < bins; ++bin)
    g_exited_requests[bin] += CacheBins::of(*cache, bin).requests.load(std::memory_order_relaxed);
  list_push(g_recycled, *cache);
}

// A flushed cache's slots give their pages back (its thread touched as many as its bins grew),
// those of every tag it has slots for; outside the registry lock, as madvise is a system call.
void release_slot_pages(ThreadCache* cache) {
  for (unsigned tag = 0, tags = registered_tags(); tag < tags; ++tag) {
    const TagBins* tag_bins = CacheBins::tag_bins(*cache, tag);
    if (tag_bins == nullptr) continue;
    const auto first = reinterpret_cast<std::uintptr_t>(tag_bins->first_slots);
    const auto last = reinterpret_cast<std::uintptr_t>(tag_bins->slots + kSlotCount);
    const std::uintptr_t start = (first + kPageSize - 1) & ~(kPageSize - 1);
    const std::uintptr_t end = last & ~(kPageSize - 1);
    if (start < end) os_decommit(reinterpret_cast<void*>(start), end - start);
  }
}

// The recycled caches that keep their slot pages, at most: those of the threads that exited
// last, which the next threads to start take first (g_recycled is a stack). Giving the pages
// back at every exit costs a madvise (its TLB shootdown reaches every CPU the process runs on)
// and, in the next thread to take the cache, a page fault per page touched again: with
// mimalloc-bench's mleak (10 threads at a time, one calloc each) that was 1 fault and 1
// madvise more per thread than glibc. 16 caches keep at most 16 x 71 KiB, usually a page or
// two each; decay and malloc_trim give them back (release_recycled_slot_pages).
constexpr std::size_t kRecycledWithSlotPages = 16;

void retire_cache(ThreadCache* cache) {
  {
    LockGuard guard(g_registry_lock);
    unlink_live(cache);
    if (g_recycled_with_slot_pages < kRecycledWithSlotPages) {
      ++g_recycled_with_slot_pages;
      cache->slot_pages_kept = true;
      recycle(cache);
      return;
    }
  }
  // Off both lists meanwhile, so no new thread takes the cache while its pages go.
  release_slot_pages(cache);
  LockGuard guard(g_registry_lock);
  recycle(cache);
}

// Gives the bin's blocks back to the central lists (which keep them aside, without waiting,
// while held for fork()).
// (A bin without slots holds nothing, and stays all nullptr.)
void flush_bin(unsigned bin_index, CacheBin& bin) {
  give_blocks(bin_index, bin.bottom_slot(), bin.count());
  bin.set_count(0);
}

void empty_bin_into_spans(ThreadCache& cache, unsigned bin_index) {
  CacheBin& bin = CacheBins::of(cache, bin_index);
  if (bin.bottom_slot() == nullptr) return;  // no slots: empty, and must stay all nullptr
  return_blocks_to_spans(bin_index, bin.bottom_slot(), bin.count());
  bin.set_count(0);
  set_limit(cache, bin_index, initial_limit(bin_class(bin_index)));
}

// Decay and malloc_trim moved the flush epoch on: the cache goes back into the spans, past the
// central stacks, so that its refills come from few spans and the spans that only scattered
// cached blocks kept alive empty. Once is not enough: the blocks the program holds at that
// moment come back to the cache, and a program that works in cycles may hold the same ones at
// every flush (its slow paths, hence the flushes, fall at the same point of each cycle). So each
// bin also empties at its next few slow paths, which fall at other points of the cycle.
constexpr std::uint8_t kDrainingSlowPaths = 4;

// The bins go a few at a time, at most this many blocks per slow path (at least one bin): a
// cache of 20 busy classes emptied at once was 5,000 blocks, over 100 us inside one malloc.
constexpr std::uint32_t kBlocksEmptiedPerSlowPath = 512;

void start_emptying_into_spans(ThreadCache& cache) {
  cache.bins_to_empty = cache.bins_left_to_empty = registered_bins();
  for (unsigned tag = 0, tags = registered_tags(); tag < tags; ++tag) {
    if (TagBins* tag_bins = CacheBins::tag_bins(cache, tag))
      std::fill(std::begin(tag_bins->draining), std::end(tag_bins->draining), kDrainingSlowPaths);
  }
}

void empty_next_bins_into_spans(ThreadCache& cache) {
  std::uint32_t emptied = 0;
  while (cache.bins_left_to_empty != 0 && emptied < kBlocksEmptiedPerSlowPath) {
    const unsigned bin_index = cache.bins_to_empty - cache.bins_left_to_empty--;
    CacheBin& bin = CacheBins::of(cache, bin_index);
    emptied += bin.count();
    empty_bin_into_spans(cache, bin_index);
  }
}

// malloc's byte countdown: what ran down since it was set comes off both distances it stands for,
// then it restarts from the nearer one.
void settle_malloc_countdown(ThreadCache& cache) {
  const std::int64_t used =
      cache.malloc_bytes_set - CacheBins::malloc_bytes_before_slow_path(cache);
  cache.bytes_to_sample -= used;
  cache.bytes_to_clock -= used;
  cache.malloc_bytes_set = CacheBins::malloc_bytes_before_slow_path(cache);
}

// Whether the sampling settings (the mean) changed since the thread drew its distance.
bool sample_settings_changed(const ThreadCache& cache) {
  return cache.sample_settings != g_sample_settings.load(std::memory_order_relaxed);
}

// A new cache, or a new mean set by any thread: a new distance, less the `counted` bytes of the
// request at hand (a thread's first mallocs are sampled as any other). A thread comes here at its
// next malloc slow path or look at the clock, whichever is first: one whose bins serve every
// malloc, a loop that frees what it allocates, reaches only the look.
void take_new_sample_settings(ThreadCache& cache, std::int64_t counted) {
  cache.sample_settings = g_sample_settings.load(std::memory_order_relaxed);
  cache.bytes_to_sample = draw_sample_distance(cache.sample_random) - counted;
}

void restart_malloc_countdown(ThreadCache& cache) {
  cache.malloc_bytes_set = std::min(cache.bytes_to_sample, cache.bytes_to_clock);
  CacheBins::malloc_bytes_before_slow_path(cache) = cache.malloc_bytes_set;
}

// Every slow path of a thread with a cache starts here: a look at the clock every few slow paths,
// or when the fast path counted its calls down, the emptying of the central stacks that a class
// asked for where no decay thread runs, and the flushes that decay or malloc_trim asked for. A
// relaxed load and a few compares otherwise. `for_the_clock`: the fast path could have served the
// call, and came here only for the look; the class's bin is then not emptied (that and the refill
// that follows would make one malloc fault in the pages of both).
void housekeeping(ThreadCache& cache, unsigned bin, bool for_the_clock) {
  std::uint32_t& calls_before_clock = CacheBins::calls_before_clock(cache);
  if (--cache.clock_countdown == 0 || calls_before_clock == 0 || cache.clock_look_due)
      [[unlikely]] {
    cache.clock_countdown = kSlowPathsPerClockCheck;
    calls_before_clock = look_at_clock(cache.clock_look);
    cache.clock_look_due = false;
    settle_malloc_countdown(cache);
    cache.bytes_to_clock = std::int64_t{calls_before_clock} * kMallocBytesPerClockCall;
    if (sample_settings_changed(cache)) take_new_sample_settings(cache, 0);
    restart_malloc_countdown(cache);
  }
  serve_stack_drain_request();
  const std::uint32_t epoch = g_flush_epoch.load(std::memory_order_relaxed);
  if (cache.flush_epoch.load(std::memory_order_relaxed) != epoch) [[unlikely]] {
    cache.flush_epoch.store(epoch, std::memory_order_relaxed);
    start_emptying_into_spans(cache);
  }
  if (cache.bins_left_to_empty != 0) [[unlikely]]
    empty_next_bins_into_spans(cache);
  std::uint8_t& draining = CacheBins::tag_bins(cache, bin_tag(bin))->draining[bin_class(bin)];
  if (draining != 0 && !for_the_clock) [[unlikely]] {
    --draining;
    empty_bin_into_spans(cache, bin);
  }
  if (cache.clock_look.quiet_step) [[unlikely]] {  // decay_requests.hpp, ClockLook
    cache.clock_look.quiet_step = false;
    for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) empty_bin_into_spans(cache, b);
    cache.bins_left_to_empty = 0;
    release_retained_spans();
  }
}

// Under the cache's lock, in its owner's slow path: the bins that other threads reclaimed
// blocks from move what is left back to their homes, where the slow paths expect it.
void settle(ThreadCache& cache) {
  if (!cache.reclaimed) [[likely]]
    return;
  cache.reclaimed = false;
  for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) {
    if (!has_slots(cache, b)) continue;
    CacheBin& bin = CacheBins::of(cache, b);
    void** const home = CacheBins::home(cache, b);
    if (bin.bottom_slot() == home) continue;
    void** const top = std::copy(bin.bottom_slot(), bin.top_slot(), home);
    bin.bottom.store(home, std::memory_order_relaxed);
    bin.top.store(top, std::memory_order_relaxed);
  }
}

// The owner's slow paths run with their cache locked and settled.
class OwnerGuard {
 public:
  explicit OwnerGuard(ThreadCache& cache) : guard_(cache.lock) { settle(cache); }

 private:
  LockGuard guard_;
};

void flush_cache(ThreadCache& cache) {
  for (unsigned bin = 0, bins = registered_bins(); bin < bins; ++bin)
    flush_bin(bin, CacheBins::of(cache, bin));
}

void on_thread_exit(void* data) {
  auto* cache = static_cast<ThreadCache*>(data);
  // Not this thread's cache, or not this thread's exit: on Windows DeleteFiber runs a fiber's
  // callback on the thread that deletes the fiber (os.hpp), and the cache's owner lives on and
  // may still use it. The value that held the cache is gone: the owner's next slow path sets it
  // again (own_thread_cache), and its exit flushes the cache; should the owner exit before, a
  // decay step finds it gone and reaps the cache, as after TerminateThread. The owner is known by
  // its thread id, or by t_cache in a child of fork(), whose thread has another id than its
  // parent's.
  if ((cache->owner_tid != os_thread_id() && cache != t_cache) ||
      !os_thread_exit_is_running(cache)) {
    cache->exit_value_set.store(false, std::memory_order_relaxed);
    return;
  }
  {
    OwnerGuard owner(*cache);
    flush_cache(*cache);
  }
  t_cache = &g_empty_cache;
  t_exited = true;  // its later calls go to the central lists
  retire_cache(cache);
  note_decay_work();  // the blocks it flushed, and its slot pages, may go back
}

// Whether membarrier(2) can order this process's threads (registered once at start-up, and
// again in a child of fork() if the kernel asks). ThreadSanitizer cannot see the order it
// gives, so its builds never reclaim.
constinit bool g_can_reclaim = false;

// A full memory barrier in every running thread of the process (os_membarrier), registering
// first where the process is not registered (a child of fork()).
bool barrier_in_every_thread() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const bool done = os_membarrier() || (os_membarrier_register() && os_membarrier());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return done;
}

// Whether any bin of the cache holds a block. Of another thread's cache: a racy look, with
// relaxed loads, good for a decision that a later look corrects.
bool holds_blocks(const ThreadCache& cache) {
  for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) {
    const CacheBin& bin = CacheBins::of(cache, b);
    if (bin.top_slot() > bin.bottom_slot()) return true;
  }
  return false;
}

}  // namespace

bool count_malloc_bytes(std::size_t size) {
  ThreadCache* cache = t_cache;
  if (cache == &g_empty_cache) {
    // A thread's first malloc, or one above the pools: a thread that samples counts on its cache,
    // which it gets now.
    if (g_sample_mean.load(std::memory_order_relaxed) == 0 ||
        (cache = own_thread_cache()) == nullptr)
      return false;
  }
  std::int64_t& left = CacheBins::malloc_bytes_before_slow_path(*cache);
  // Not below 0: the fast path did not count this request (its bin was empty, or the request is
  // not the pools'). A request that a reclaim of its bin sent here after the fast path counted
  // it is counted twice: rare, and at worst a sample a request early.
  if (left >= 0) left -= static_cast<std::int64_t>(size);
  const bool new_settings = sample_settings_changed(*cache);
  if (left >= 0 && !new_settings) return false;
  settle_malloc_countdown(*cache);
  if (new_settings) take_new_sample_settings(*cache, static_cast<std::int64_t>(size));
  bool sample = false;
  if (cache->bytes_to_sample < 0) {
    sample = g_sample_mean.load(std::memory_order_relaxed) != 0;
    cache->bytes_to_sample = draw_sample_distance(cache->sample_random);
  }
  if (cache->bytes_to_clock < 0) {
    cache->clock_look_due = true;  // housekeeping sets the distance to the next look
    cache->bytes_to_clock = kNoSampleBytes;
  }
  restart_malloc_countdown(*cache);
  return sample;
}

namespace {

// Registers the cache's exit flush. For keys past the first 32 glibc allocates here; the cache is
// already in place to serve that allocation.
void set_exit_value(ThreadCache& cache) {
  cache.exit_value_set.store(true, std::memory_order_relaxed);
  os_set_thread_exit_value(&cache);
}

}  // namespace

ThreadCache* own_thread_cache(bool wait_for_fork) {
  if (ThreadCache* cache = t_cache; cache != &g_empty_cache) {
    if (!cache->exit_value_set.load(std::memory_order_relaxed)) [[unlikely]]
      set_exit_value(*cache);  // a fiber's deletion dropped it (on_thread_exit)
    return cache;
  }
  if (t_exited || g_without_caches.load(std::memory_order_relaxed) || !ensure_initialised())
    return nullptr;
  ThreadCache* cache = new_cache(wait_for_fork);
  if (cache == nullptr) return nullptr;
  // On Windows each thread word takes a TLS index of the process at its first write. With none
  // left, a word keeps reading as its initial value: every thread then goes uncached, its calls
  // served by the central lists as an exited thread's, rather than making a cache at every call.
  // On Linux the words are thread-local variables, and the test folds away.
  t_cache = cache;
  if (t_cache != cache) [[unlikely]] {
    g_without_caches.store(true, std::memory_order_relaxed);
    retire_cache(cache);
    return nullptr;
  }
  // The exited flag's index, taken now, after the cache's (with one index left, the cache gets
  // it), so that a thread that had a cache can be marked exited.
  t_exited = false;
  set_exit_value(*cache);
  return cache;
}

void init_thread_caches() {
  os_on_thread_exit(on_thread_exit);
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POOLALLOC_UNDER_TSAN 1
#endif
#endif
#if !defined(__SANITIZE_THREAD__) && !defined(POOLALLOC_UNDER_TSAN)
  g_can_reclaim = os_membarrier_register();
#endif
}

void* refill_and_allocate(unsigned cls) {
  ThreadCache* cache = own_thread_cache();
  const unsigned bin_index =
      cache == nullptr ? cls : static_cast<unsigned>(cache->current_bin(cls));
  void* block = nullptr;
  if (cache == nullptr || !tag_bins_ready(*cache, bin_index)) {
    if (take_blocks(bin_index, &block, 1) == 0) return nullptr;
    g_uncached_requests[bin_index].fetch_add(1, std::memory_order_relaxed);
  } else {
    OwnerGuard owner(*cache);
    CacheBin& bin = CacheBins::of(*cache, bin_index);
    housekeeping(*cache, bin_index, bin.count() != 0);
    if (bin.count() == 0) {  // not so when a reclaim that the fast path saw was undone
      bin.set_count(take_blocks(bin_index, bin.bottom_slot(),
                                std::max<std::uint32_t>(1, bin.limit() / 2),
                                kFirstTouchesPerRefill));
      note_bytes_taken(cache->clock_look, std::int64_t{bin.count()} * class_size(cls));
      grow(*cache, bin_index);
      if (bin.count() == 0) return nullptr;
    }
    bin.count_request();
    bin.set_count(bin.count() - 1);
    block = *bin.top_slot();
  }
  // With the cache unlocked: starting the decay thread allocates (glibc's records of the new
  // thread, which it frees as that thread ends), for the allocator, not for the program.
  {
    const OwnAllocationsScope own;
    on_malloc_slow_path();
  }
  clear_mark(block);
  run_due_budget_calls();  // with no lock held, under the program's tag: the callback may allocate
  return block;
}

void flush_and_deallocate(unsigned bin_index, void* block) {
  if (is_marked_free(block)) report_double_free("free", block, bin_index);
  const int saved_errno = errno;  // free() preserves errno; flushing may madvise
  set_mark(block);
  const unsigned cls = bin_class(bin_index);
  ThreadCache* cache = own_thread_cache();
  if (cache == nullptr || !tag_bins_ready(*cache, bin_index)) {
    give_blocks(bin_index, &block, 1);
  } else {
    OwnerGuard owner(*cache);
    CacheBin& bin = CacheBins::of(*cache, bin_index);
    housekeeping(*cache, bin_index, bin.top_slot() != bin.end);
    // A mass free with no decay thread, each free of which looks at the clock (decay.hpp): the
    // bin goes back into the spans whenever it holds what it held at first, so that the spans
    // the frees empty go back now, and a program that makes no call afterwards keeps few cached
    // blocks that pin spans.
    if (cache->clock_look.mass_free && !decay_runs_in_background() &&
        bin.count() >= initial_limit(cls)) {
      note_bytes_given(cache->clock_look, std::int64_t{bin.count()} * class_size(cls));
      empty_bin_into_spans(*cache, bin_index);
    }
    if (bin.top_slot() == bin.end && bin.limit() < bin_capacity(cls)) {
      grow(*cache, bin_index);
    } else if (bin.top_slot() == bin.end) {
      // The older half goes; the blocks freed last, likely still in the CPU's caches, stay.
      const std::uint32_t older = bin.count() / 2;
      void** const bottom = bin.bottom_slot();
      if (gives_back_into_spans(bin_index))
        return_blocks_to_spans(bin_index, bottom, older);
      else
        give_blocks(bin_index, bottom, older);
      note_bytes_given(cache->clock_look, std::int64_t{older} * class_size(cls));
      bin.top.store(std::copy(bottom + older, bin.top_slot(), bottom), std::memory_order_relaxed);
    }
    *bin.top_slot() = block;
    bin.set_count(bin.count() + 1);
  }
  note_decay_work();
  errno = saved_errno;
}

void count_call_outside_pools() {
  ThreadCache* const cache = t_cache;
  if (cache == &g_empty_cache ||
      (--CacheBins::calls_before_clock(*cache) != 0 && !cache->clock_look_due))
    return;
  const int saved_errno = errno;
  {
    OwnerGuard owner(*cache);
    housekeeping(*cache, 0, true);
  }
  errno = saved_errno;
}

void flush_thread_cache() {
  if (t_cache == &g_empty_cache) return;
  OwnerGuard owner(*t_cache);
  flush_cache(*t_cache);
}

// Held for fork(), the registry cannot change: it is read as it is. (The forking thread
// itself may be asking, from another library's fork handler.)
// A cache is its thread's alone until the kernel says the thread is gone (os_thread_exited);
// nothing can touch it after that. Caches made
// in a parent process are left alone: fork may have stopped their thread in the middle of its
// fast path, with its bin torn. Skipped while the registry is held for fork(); a dead cache
// flushed then stays off both lists (its few kilobytes are not reused).
void reap_dead_caches() {
  const int saved_errno = errno;
  const int pid = os_process_id();
  ThreadCache* dead = nullptr;
  {
    TryLockGuard guard(g_registry_lock);
    if (!guard.locked()) return;
    list_for_each(g_live, [&](ThreadCache& cache) {
      if (cache.owner_pid == pid && os_thread_exited(pid, cache.owner_tid)) {
        unlink_live(&cache);
        list_push(dead, cache);
      }
    });
  }
  while (ThreadCache* cache = list_pop(dead)) {
    {
      LockGuard reclaiming(cache->lock);  // a reclaim that found it alive may hold it
      flush_cache(*cache);
    }
    release_slot_pages(cache);
    TryLockGuard guard(g_registry_lock);
    if (guard.locked()) recycle(cache);
  }
  errno = saved_errno;
}

// Under the registry lock, which keeps the recycled caches from new owners (madvise is one of
// the calls a critical section may make, lock.hpp).
void release_recycled_slot_pages() {
  TryLockGuard guard(g_registry_lock);
  if (!guard.locked()) return;  // held for fork(): nothing to give back now
  for (ThreadCache* cache = g_recycled; cache != nullptr && g_recycled_with_slot_pages != 0;
       cache = cache->next) {
    if (!cache->slot_pages_kept) continue;
    release_slot_pages(cache);
    cache->slot_pages_kept = false;
    --g_recycled_with_slot_pages;
  }
}

// Reclaiming another thread's bin without stopping its owner. The owner's pop (ThreadCache::pop)
// moves top down first and then reads bottom; if top fell below it, it puts top back and takes
// the slow path, which waits for the cache's lock. It uses no fence: the reclaiming thread makes
// one for it. Holding the lock (no slow path of the owner runs), it reads top (T0), moves bottom
// up to T0 and runs membarrier(2), which puts a full barrier at some point M of the owner's
// instruction stream (an interrupt if it runs, the context switch if not). Then it reads top
// again (T1), takes [old bottom, min(T1, T0)) and sets bottom there. Why no block is had twice:
// - a pop that reads bottom after M sees T0 or the final bottom, and takes only blocks at or
//   above what it saw, never one the reclaimer takes;
// - a pop that read bottom before M also moved top before M, so T1 is at most the slot of the
//   block it took; a slot at or above T1 is not taken, and a slot below it that a later push
//   refilled holds that push's block, which the owner gave up (the push stores top with release
//   ordering, T1 is read with acquire: the reclaimer reads the slot's new contents);
// - a pop that moved top down and then puts it back (bottom too high) leaves its block in the
//   bin: if T1 was read in between, the block is at T1, above what is taken.
// Pushes write at top, which never falls below the final bottom but for such a moment.
bool reclaim_caches(Reclaim which) {
  if (!g_can_reclaim) return false;
  TryLockGuard reclaiming(g_reclaim_lock);
  if (!reclaiming.locked()) return true;  // another thread reclaims now: try again later
  ThreadCache* claimed = nullptr;
  bool left = false;
  {
    TryLockGuard registry(g_registry_lock);
    if (!registry.locked()) return true;  // held for fork()
    const std::uint32_t epoch = g_flush_epoch.load(std::memory_order_relaxed);
    for (ThreadCache* cache = g_live; cache != nullptr; cache = cache->next) {
      // An active thread empties its own cache at its next slow path, or goes idle and a later
      // step takes what its bins hold then. (A racy look at the bins: it only decides whether
      // a later step is wanted.)
      if ((which == Reclaim::kIdle &&
           cache->flush_epoch.load(std::memory_order_relaxed) == epoch) ||
          cache == t_cache || !cache->lock.try_lock()) {
        left |= holds_blocks(*cache);
        continue;
      }
      bool moved = false;
      for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) {
        TagBins* const tag_bins = CacheBins::tag_bins(*cache, bin_tag(b));
        if (tag_bins == nullptr) continue;
        CacheBin& bin = CacheBins::of(*cache, b);
        void** const bottom = bin.bottom_slot();
        void** const top = bin.top_slot();
        tag_bins->reclaim_from[bin_class(b)] = bottom;
        tag_bins->reclaim_to[bin_class(b)] = top;
        if (top <= bottom) continue;
        bin.bottom.store(top, std::memory_order_relaxed);
        moved = true;
      }
      if (!moved) {
        cache->lock.unlock();
        continue;
      }
      list_push(claimed, *cache, &ThreadCache::reclaim_next);
    }
  }
  if (claimed == nullptr) return left;
  const bool ordered = barrier_in_every_thread();
  while (ThreadCache* const cache = list_pop(claimed, &ThreadCache::reclaim_next)) {
    // The bins the first pass went over: the cache's lock kept its tags' slots as they were,
    // and a tag registered since has no slots in it.
    for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) {
      const TagBins* const tag_bins = CacheBins::tag_bins(*cache, bin_tag(b));
      if (tag_bins == nullptr) continue;
      CacheBin& bin = CacheBins::of(*cache, b);
      void** const from = tag_bins->reclaim_from[bin_class(b)];
      void** const to = tag_bins->reclaim_to[bin_class(b)];
      if (to <= from) continue;
      void** const bottom = ordered ? std::min(bin.top.load(std::memory_order_acquire), to) : from;
      bin.bottom.store(bottom, std::memory_order_relaxed);
      if (bottom == from) continue;
      return_blocks_to_spans(b, from, static_cast<std::uint32_t>(bottom - from));
      cache->reclaimed = true;
    }
    cache->lock.unlock();
  }
  return true;
}

ClassUsage class_usage(unsigned bin_index) {
  TryLockGuard guard(g_registry_lock);
  ClassUsage usage{g_exited_requests[bin_index] + g_uncached_requests[bin_index].load(),
                   g_abandoned[bin_index]};
  for (ThreadCache* cache = g_live; cache != nullptr; cache = cache->next) {
    const CacheBin& bin = CacheBins::of(*cache, bin_index);
    usage.requests += bin.requests.load(std::memory_order_relaxed);
    usage.cached += bin.count();
  }
  return usage;
}

int push_tag(int tag) {
  if (!is_registered_tag(tag)) {
    errno = EINVAL;
    return -1;
  }
  // The stack lives in the thread's cache. A thread whose first call this is, while fork()
  // holds the registry of caches, waits for the fork to end, as poolalloc_tag_register does
  // (tag_registry.cpp says when that is safe); the forking thread cannot, and fails.
  ThreadCache* const cache = own_thread_cache(/*wait_for_fork=*/!holds_locks_for_fork());
  if (cache == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  std::uint32_t& depth = CacheBins::tag_depth(*cache);
  if (depth == kTagStackDepth) {
    errno = EOVERFLOW;
    return -1;
  }
  CacheBins::tag_stack(*cache)[depth++] = static_cast<std::uint8_t>(tag);
  CacheBins::tag_offset(*cache) = bin_of(static_cast<unsigned>(tag), 0);
  if (tag != 0) g_tags_pushed.store(true, std::memory_order_relaxed);
  return 0;
}

int pop_tag() {
  ThreadCache& cache = *t_cache;  // the empty cache has nothing pushed
  std::uint32_t& depth = CacheBins::tag_depth(cache);
  if (depth == 0) {
    errno = EINVAL;
    return -1;
  }
  const std::uint8_t* const stack = CacheBins::tag_stack(cache);
  const int popped = stack[--depth];
  CacheBins::tag_offset(cache) = depth == 0 ? 0 : bin_of(stack[depth - 1], 0);
  return popped;
}

int current_tag() {
  return static_cast<int>(bin_tag(CacheBins::tag_offset(*t_cache)));
}

std::uint64_t live_thread_caches() {
  TryLockGuard guard(g_registry_lock);
  return g_live_count;
}

void lock_thread_caches_for_fork() {
  g_reclaim_lock.lock_for_fork();
  g_registry_lock.lock_for_fork();
}
// In the child only the forking thread lives on: the other threads' caches leave the live list
// (their counts of requests with them, as at an exit). Their bins may be torn, fork having
// stopped their threads anywhere, so their blocks stay where they are, and the caches are not
// recycled; the statistics count those blocks as cached (g_abandoned), off by at most the one
// block of a pop or push that fork interrupted.
void unlock_thread_caches_after_fork(bool in_child) {
  if (in_child) {
    list_for_each(g_live, [](ThreadCache& cache) {
      if (&cache == t_cache) return;
      unlink_live(&cache);
      for (unsigned b = 0, bins = registered_bins(); b < bins; ++b) {
        const CacheBin& bin = CacheBins::of(cache, b);
        g_exited_requests[b] += bin.requests.load(std::memory_order_relaxed);
        // No reclaim was under way (fork holds the reclaim lock): [bottom, top) are the bin's.
        void** const bottom = bin.bottom_slot();
        void** const top = bin.top_slot();
        if (top > bottom)
          g_abandoned[b] += std::min<std::uint64_t>(top - bottom, bin_capacity(bin_class(b)));
      }
    });
  }
  g_registry_lock.unlock_after_fork(in_child);
  g_reclaim_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
