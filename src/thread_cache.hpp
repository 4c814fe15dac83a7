// Thread caches: per thread and bin (a size class of a memory tag, bins.hpp), a bounded stack of
// free blocks; and the thread's stack of memory tags. The fast path
// (ThreadCache::pop and push, inline here) runs without locks or atomic read-modify-writes; the
// functions declared below are the slow paths, which move blocks between a bin and the central
// lists half a bin at a time. Only this module touches the bins.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bins.hpp"
#include "central_lists.hpp"
#include "decay_requests.hpp"
#include "depth_scope.hpp"
#include "free_block_marks.hpp"
#include "lock.hpp"
#include "platform.hpp"
#include "stack_capture.hpp"

namespace poolalloc::internal {

// A bin's blocks are pointers in an array of the thread's cache, not a list through the
// blocks: malloc reads nothing from the block it returns (blocks freed in a random order would
// make a list a chain of dependent cache misses), and a write into a freed block can redirect
// no later malloc.
//
// The owner's fast path pops and pushes at `top` with plain loads and stores (relaxed atomics,
// the same instructions). Another thread may take the older blocks, at `bottom`, from the bins
// of a cache it has locked (reclaim_caches: malloc_trim, and decay for idle threads); the
// owner's slow path locks its cache and puts what is left back at the bin's home.
struct alignas(32) CacheBin {
  std::atomic<void**> top{nullptr};  // [bottom, top) are free blocks, each with its free mark;
                                     // top[-1] is the block freed last
  void** end = nullptr;  // home + limit: a free that finds top == end takes the slow path
  std::atomic<void**> bottom{nullptr};  // the bin's home, or above it once blocks were
                                        // reclaimed; all nullptr in the empty cache, so that
                                        // both fast paths are slow
  // Allocations served from this bin (statistics). Atomic because the statistics read it while
  // the owner counts on: a relaxed load and store, which cost malloc 2 instructions over an
  // `addq` to memory, where a plain counter would be a data race.
  std::atomic<std::uint64_t> requests{0};
  void count_request() {
    requests.store(requests.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  void** top_slot() const { return top.load(std::memory_order_relaxed); }
  void** bottom_slot() const { return bottom.load(std::memory_order_relaxed); }
  std::uint32_t count() const { return static_cast<std::uint32_t>(top_slot() - bottom_slot()); }
  // The owner's slow path, which has settled the bin (bottom at home), alone reads or writes the
  // limit, which grows with traffic (thread_cache.cpp).
  std::uint32_t limit() const { return static_cast<std::uint32_t>(end - bottom_slot()); }
  void set_count(std::uint32_t count) {
    top.store(bottom_slot() + count, std::memory_order_relaxed);
  }
};
static_assert(sizeof(CacheBin) == 32, "the fast path indexes bins with a shift");

// The most blocks a bin of class `cls` holds: a batch (central_lists.hpp), and at least 128
// blocks or 128 KiB, whichever is fewer. The floor is for the classes above 256 bytes, whose
// batches of 32 KiB are a few blocks: with a bin of 2 blocks of 16 KiB every other malloc took
// the slow path (a sweep of 4 KiB blocks runs half the instructions with it, one of 16 KiB 40 %).
// The limit still grows only with a thread's traffic, and other threads can reclaim what an idle
// thread's bins hold. A bin that overflows gives back its older half; one that runs empty takes
// half its limit. (Two batches for every class: 2 % faster over the benchmarks' geometric mean,
// but peak RSS 4 % larger, producer/consumer's 18 %.)
constexpr std::uint32_t bin_capacity(unsigned cls) {
  const std::uint32_t floor = std::min<std::uint32_t>(128, 128 * 1024 / class_size(cls));
  return std::max(batch_size(cls), floor);
}

// Bins start small and grow with traffic (as tcmalloc's do): a refill takes half the limit and
// a bin that runs empty or overflows doubles its limit, up to its capacity. A thread that
// allocates a few blocks of a class then holds a few, not a batch carved for it, and what an
// idle thread's bins keep stays small. Decay shrinks them again. Only the owner reads or writes
// `limit`; count <= limit always. The limit starts at a thirty-second of the capacity: each tag a
// thread uses has bins of its own, and a tag that allocates a few blocks of a class takes the
// first refill's into its bin (a sixteenth made a game's four tags hold twice the blocks they
// used, a page or more of some classes, and their first slots three pages a tag, not two).
constexpr std::uint32_t initial_limit(unsigned cls) {
  return std::max<std::uint32_t>(2, bin_capacity(cls) / 32);
}

// The most blocks a bin of class `cls` holds in its first slots (TagBins): what its limit is after
// its first refill, which doubles the initial limit.
constexpr std::uint32_t first_room(unsigned cls) {
  return 2 * initial_limit(cls);
}

// Where each class's slots start in an array of a tag's bins with `room(cls)` slots per class,
// and how many there are in all.
template <std::uint32_t (*room)(unsigned)>
inline constexpr auto kOffsetsOfSlots = [] {
  std::array<std::uint32_t, kClassCount + 1> offsets{};
  for (unsigned cls = 0; cls < kClassCount; ++cls) offsets[cls + 1] = offsets[cls] + room(cls);
  return offsets;
}();
inline constexpr auto& kFirstSlotOffsets = kOffsetsOfSlots<first_room>;
inline constexpr auto& kSlotOffsets = kOffsetsOfSlots<bin_capacity>;
inline constexpr std::size_t kFirstSlotCount = kFirstSlotOffsets[kClassCount];
inline constexpr std::size_t kSlotCount = kSlotOffsets[kClassCount];

// What a cache has for each tag whose bins its thread used (its first malloc or free of a block
// of the tag gives it them): the slots of the tag's bins, and the slow paths' per-bin scratch.
// The untagged bins' follow the cache; a tag's are mapped as the thread first needs them, so a
// cache holds address space for the tags its thread used only, and touches the pages of the
// classes it used, as far as their bins grew.
//
// A bin has two homes: its first slots, room for first_room(cls) blocks, where it lives while its
// limit is at most that, and its slots, room for its capacity, where it moves as its limit grows
// past it (and from where it moves back as decay resets its limit). The first slots of all
// classes take 4.5 KiB, and with the scratch before them two pages: a tag whose bins see little
// traffic (a thread that allocates a few blocks of many classes under it) touches those two pages
// only, where slots sized for the capacity took a page or more for each class it used (a game's
// four tags touched 176 KiB of slots).
struct TagBins {
  // Scratch of reclaim_caches, under the cache's lock: each bin's bottom and top when it was
  // moved.
  void** reclaim_from[kClassCount] = {};
  void** reclaim_to[kClassCount] = {};
  // Per class, how many more slow paths empty the bin into the spans (start_emptying_into_spans).
  std::uint8_t draining[kClassCount] = {};
  void* first_slots[kFirstSlotCount];
  void* slots[kSlotCount];  // after first_slots: CacheBins::home tells the two apart by that
};
static_assert(offsetof(TagBins, slots) <= 2 * kPageSize,
              "a tag's scratch and first slots take two pages of its mapping");

// The deepest a thread's stack of memory tags goes.
inline constexpr std::uint32_t kTagStackDepth = 64;

class ThreadCache {
 public:
  constexpr ThreadCache() {}  // leaves the bins as mapped (see bins_)

  // A block of bin `bin` for a request of `size` bytes; nullptr when the bin is empty, or when
  // the malloc's bytes ran the thread's countdown out. Reads the bin and its top slot, never the
  // block: clearing its mark is a store.
  void* pop(std::size_t bin_index, std::size_t size) {
    CacheBin* const bin = &bins_.at[bin_index];
    void** const top = bin->top_slot();
    if (top <= bin->bottom_slot()) [[unlikely]]  // <=: another thread may have moved bottom up
      return nullptr;
    // Time for the heap profile's next sample or the thread's look at the clock: the slow path
    // sees which (count_malloc_bytes), then takes the block.
    if ((malloc_bytes_before_slow_path_ -= static_cast<std::int64_t>(size)) < 0) [[unlikely]]
      return nullptr;
    // Takes the block first, then looks at bottom again: a thread reclaiming blocks from this
    // bin may have moved it meanwhile (thread_cache.cpp, reclaim_caches, says why this order).
    bin->top.store(top - 1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (top - 1 < bin->bottom_slot()) [[unlikely]] {
      bin->top.store(top, std::memory_order_relaxed);
      return nullptr;
    }
    bin->count_request();
    void* block = top[-1];
    clear_mark(block);
    return block;
  }

  // Pushes a block of bin `bin_index`; false when the bin is full (or has no slots: its tag's
  // bins are new to the thread) or the block may carry a free mark already (a double free,
  // which the slow path tells apart from a live block that only looks so, and reports).
  bool push(std::size_t bin_index, void* block) {
    CacheBin& bin = bins_.at[bin_index];
    void** const top = bin.top_slot();
    if (top == bin.end) [[unlikely]]
      return false;
    if (--calls_before_clock_ == 0) [[unlikely]]  // the slow path looks at the clock (decay.hpp)
      return false;
    const std::uintptr_t mark = mark_of(block);
    if (may_be_a_mark(words_of(block)[1], mark)) [[unlikely]]
      return false;
    words_of(block)[1] = mark;
    *top = block;
    bin.top.store(top + 1, std::memory_order_release);  // the slot before the top that shows it
    return true;
  }

  // The bin of class `cls` of the thread's current tag: malloc's fast path adds the tag's
  // offset, one instruction.
  std::size_t current_bin(std::size_t cls) const { return tag_offset_ + cls; }

 private:
  // The slow paths of thread_cache.cpp alone reach the bins and their slots.
  friend struct CacheBins;
  // First, so that the fast path finds bin b at t_cache + 32 * b. Every bin of every tag: 576 KiB
  // of address space (caches are mapped, 8 at a time), of which the constructor writes nothing
  // (the union's active member is an empty one), so that the bins are as mapped, all zero
  // (nullptr), which sends both fast paths to the slow path until the thread's slow path gives
  // their tag slots (TagBins). A thread touches the pages of the bins of the tags it uses only.
  union Bins {
    struct Unwritten {};
    constexpr Bins() : unwritten() {}
    Unwritten unwritten;
    CacheBin at[kBinCount];
  } bins_;
  // Frees that may pass before the thread's next look at the clock; 0 in the empty cache, whose
  // bins send every call to the slow path before it is counted.
  std::uint32_t calls_before_clock_ = 0;
  // Bytes that mallocs may ask for before their slow path: the nearer of the heap profile's next
  // sample and the thread's next look at the clock (count_malloc_bytes). One countdown serves
  // both, so that malloc's fast path pays for one.
  std::int64_t malloc_bytes_before_slow_path_ = 0;
  // bin_of(current tag, 0): what malloc's fast path adds to the class (as wide as a pointer, so
  // that the add reads it from memory: one instruction).
  std::size_t tag_offset_ = 0;
  // The tags pushed and not popped, the current one on top (tag_offset_'s), and how many.
  std::uint8_t tag_stack_[kTagStackDepth] = {};
  std::uint32_t tag_depth_ = 0;
  // Per tag, its bins' slots and scratch, or nullptr while the tag's bins have none (all
  // nullptr). The untagged one's, after the cache, are the cache's from when it is first made.
  TagBins* tag_bins_[kTagCount] = {};

 public:
  ThreadCache* next = nullptr;  // in the registry of live caches
  ThreadCache* prev = nullptr;
  // Held by the owner's slow paths and by a thread reclaiming blocks from the bins.
  Lock lock;
  // Under `lock`: another thread took blocks from some bins (their bottoms are above home).
  bool reclaimed = false;
  // Under the registry lock, in a recycled cache: its slot pages were not given back when its
  // thread exited (thread_cache.cpp, retire_cache).
  bool slot_pages_kept = false;
  // Whether a value of the thread-exit callback holds the cache (os_set_thread_exit_value). On
  // Windows a fiber's deletion drops the value it held, on whichever thread deletes the fiber:
  // the callback then clears this, and the owner's next slow path sets the value again in the
  // fiber it runs (own_thread_cache). Atomic: the deleting thread may be another than the owner.
  std::atomic<bool> exit_value_set{false};
  // Scratch of reclaim_caches, under `lock`: the next cache being reclaimed.
  ThreadCache* reclaim_next = nullptr;
  // Slow-path housekeeping (decay.hpp): the flush epoch this cache last emptied itself at (read
  // by decay to find idle caches), how many slow paths remain before the next look at the
  // clock, and what the looks carry from one to the next.
  std::atomic<std::uint32_t> flush_epoch{0};
  std::uint32_t clock_countdown = 0;
  ClockLook clock_look;
  // Bins still to empty into the spans since the flush epoch moved, the last ones by bin, of
  // the first `bins_to_empty` (empty_next_bins_into_spans: a few per slow path).
  std::uint32_t bins_left_to_empty = 0;
  std::uint32_t bins_to_empty = 0;
  // malloc's byte countdown (count_malloc_bytes): what it was set to, and the bytes from then to
  // the heap profile's next sample and to the next look at the clock; that look is due at the
  // next housekeeping. The state of the thread's random draws, and the sampling settings it drew
  // its distance under.
  std::int64_t malloc_bytes_set = 0;
  std::int64_t bytes_to_sample = 0;
  std::int64_t bytes_to_clock = 0;
  bool clock_look_due = false;
  std::uint32_t sample_settings = 0;
  std::uint64_t sample_random = 0;
  // The process and kernel thread that own the cache (reap_dead_caches).
  int owner_pid = 0;
  int owner_tid = 0;
  // The stack of the thread's last heap-profile sample, which its next one may find unchanged
  // (heap_sampler.cpp). Last, and, as the bins, a union whose active member is empty, so that no
  // constructor writes it: untouched by threads that do not sample, all zero until one does.
  union LastSample {
    struct Unwritten {};
    constexpr LastSample() : unwritten() {}
    Unwritten unwritten;
    CapturedStack stack;
  } last_sample;
};

// A cache's bins, their slots and its tag stack, which ThreadCache keeps from all but the slow
// paths of thread_cache.cpp and the thread cache's unit tests.
struct CacheBins {
  static CacheBin& of(ThreadCache& cache, unsigned bin) { return cache.bins_.at[bin]; }
  static const CacheBin& of(const ThreadCache& cache, unsigned bin) { return cache.bins_.at[bin]; }
  // The slots and scratch of tag `tag`'s bins; nullptr while they have none.
  static TagBins* tag_bins(const ThreadCache& cache, unsigned tag) { return cache.tag_bins_[tag]; }
  static void attach_tag_bins(ThreadCache& cache, unsigned tag, TagBins* bins) {
    cache.tag_bins_[tag] = bins;
  }
  // Where bin `bin`, whose tag has slots, keeps its blocks while its limit is `limit` and nothing
  // was reclaimed from it (TagBins): its first slots up to first_room, its slots above.
  static void** home_for(const ThreadCache& cache, unsigned bin, std::uint32_t limit) {
    TagBins* const tag_bins = cache.tag_bins_[bin_tag(bin)];
    const unsigned cls = bin_class(bin);
    return limit <= first_room(cls) ? tag_bins->first_slots + kFirstSlotOffsets[cls]
                                    : tag_bins->slots + kSlotOffsets[cls];
  }
  // Where it keeps them now: its end, home + limit, which other threads leave as it is, lies in
  // the first slots exactly when the bin lives there, as the slots follow them.
  static void** home(const ThreadCache& cache, unsigned bin) {
    TagBins* const tag_bins = cache.tag_bins_[bin_tag(bin)];
    const bool first = cache.bins_.at[bin].end <= tag_bins->first_slots + kFirstSlotCount;
    return first ? tag_bins->first_slots + kFirstSlotOffsets[bin_class(bin)]
                 : tag_bins->slots + kSlotOffsets[bin_class(bin)];
  }
  static std::uint32_t& calls_before_clock(ThreadCache& cache) { return cache.calls_before_clock_; }
  static std::size_t& tag_offset(ThreadCache& cache) { return cache.tag_offset_; }
  static std::uint8_t* tag_stack(ThreadCache& cache) { return cache.tag_stack_; }
  static std::uint32_t& tag_depth(ThreadCache& cache) { return cache.tag_depth_; }
  static std::int64_t& malloc_bytes_before_slow_path(ThreadCache& cache) {
    return cache.malloc_bytes_before_slow_path_;
  }
};

// What t_cache points to before a thread's first allocation and after its exit: all bins
// empty with limit 0, so both fast paths fall through to the slow path, which creates the
// thread's cache (or, in an exiting thread, goes to the central lists directly).
extern ThreadCache g_empty_cache;

// One pointer of initial-exec TLS: no __tls_get_addr call (which may itself malloc) and no
// TLS wrapper function, whichever way the library is loaded or linked.
extern POOLALLOC_THREAD_WORD(ThreadCache*) t_cache;

// Slow path of allocation: the bin of class `cls` of the thread's current tag is empty (or has
// no slots yet: they are given it here). Refills it and returns a block, or nullptr when the
// pools cannot serve the class (the caller then forwards to the system allocator).
//
// What one call costs at most (the worst case of a malloc past the fast path): its cache's lock
// and the class's lock once each; half a bin of pointers (at most 256) copied from the central
// stack or carved from spans, reading only their records and bitmaps, never a block; at most a
// page's first touch by its marks (kFirstTouchesPerRefill), so at most two page faults; a wait
// for the class's lock of at most one other thread's refill or flush, or one decay hold
// (central_lists.cpp, kBlocksPerLockHold). Rarely more: a new span (the carving lock, and one
// mmap per 16 spans as the region grows), the thread's first call (its cache: one mmap per 8
// threads), the start of the decay thread (once per process), a wake of the sleeping decay thread
// (one futex call).
void* refill_and_allocate(unsigned cls);

// Slow path of free of a block of bin `bin`: the bin is full (or this thread has no cache yet, or
// the bin no slots: they are given it here), or the block may carry a free mark: if it does, a
// double free, which is reported and aborts.
//
// What one call costs at most: its cache's lock and the class's lock once each; half a bin of
// pointers (at most 256) onto the central stack or into their spans' bitmaps, touching no block;
// no system call while the decay thread runs (spans that empty wait for its steps,
// span_carving.cpp); without it, a madvise per span that empties past the retained budget.
void flush_and_deallocate(unsigned bin, void* block);

// A malloc or free that the pools do not serve (a block above them, glibc's) counts down to the
// thread's next look at the clock as the fast paths do, so that a program whose calls are all
// large runs the decay steps too.
void count_call_outside_pools();

// What a malloc looks at the clock after, at most: its calls counted down as bytes, this many
// each. A thread that frees looks at the clock at least every few thousand frees (their own
// countdown); one that allocates small blocks and frees none, every few thousand mallocs of 256
// bytes.
inline constexpr std::int64_t kMallocBytesPerClockCall = 256;

// malloc's slow path, first: counts the request's bytes where the fast path did not, and when
// the byte countdown ran out, sees what for. True: the heap profile samples this request. The
// thread's look at the clock, when it is due, is taken by the housekeeping of the slow path that
// follows.
bool count_malloc_bytes(std::size_t size);

// The calling thread's cache, created on its first call; nullptr in a thread that exited its
// cache already, when the pools are unavailable, or while fork() holds the registry of caches
// (unless `wait_for_fork`: then it waits for the fork to end).
ThreadCache* own_thread_cache(bool wait_for_fork = false);

// Gives all of the calling thread's cached blocks back to the central lists (malloc_trim).
void flush_thread_cache();

// malloc_trim (kAll) and decay (kIdle: caches whose owner ran no slow path since the previous
// decay step): takes the blocks of other threads' bins back into their spans, while their
// owners run on. Does nothing where the kernel has no membarrier(2). True if it took blocks, or
// left some in caches that a later step may take.
enum class Reclaim { kAll, kIdle };
bool reclaim_caches(Reclaim which);

// Decay and malloc_trim: flushes and recycles the caches of threads that are gone without their
// exit flush (a thread whose first allocation came in the last round of pthread key
// destructors, after which glibc calls ours no more).
void reap_dead_caches();

// Decay and malloc_trim: the recycled caches of exited threads that kept their slot pages give
// them back.
void release_recycled_slot_pages();

// Sets up thread-exit handling; called once during initialisation.
void init_thread_caches();

// Statistics of one bin (a class, for the untagged bins) over live and exited threads:
// allocations served, and blocks sitting free in thread caches.
struct ClassUsage {
  std::uint64_t requests;
  std::uint64_t cached;
};
ClassUsage class_usage(unsigned bin);

// The calling thread's stack of memory tags (poolalloc_tag_push and the rest), which lives with
// its cache: a thread that exits with tags pushed leaves nothing behind, and its recycled cache
// starts untagged. push_tag: 0, or -1 with errno EINVAL (not a registered tag), EOVERFLOW (the
// stack is kTagStackDepth deep) or ENOMEM (the thread has no cache and none could be had: no
// memory, or the forking thread's first call, inside fork());
// pop_tag: the tag popped, or -1 with errno EINVAL (nothing pushed).
int push_tag(int tag);
int pop_tag();
int current_tag();

#if POOLALLOC_LINUX
// How many OwnAllocationsScope the calling thread is in: the heap profile (Linux only) samples
// none of their allocations. Elsewhere nothing is counted: a thread-local variable there would
// take one of the program's TLS indexes (native_thread_word.hpp).
extern POOLALLOC_THREAD_LOCAL std::uint32_t t_own_allocations;
struct CountOwnAllocations : DepthScope {
  CountOwnAllocations() : DepthScope(t_own_allocations) {}
};
#else
struct CountOwnAllocations {};
#endif

// For its lifetime, the calling thread allocates for poolalloc itself (glibc's records of the
// decay thread it starts, dlopen's of a lookup in glibc or of libunwind): untagged, charged to no
// tag of the program's, and never a sample of the heap profile's, whose stacks are the program's
// (heap_sampler.cpp). The thread's tag stack is left as it is.
class OwnAllocationsScope {
 public:
  OwnAllocationsScope() : cache_(t_cache), tag_offset_(CacheBins::tag_offset(*cache_)) {
    if (tag_offset_ != 0) CacheBins::tag_offset(*cache_) = 0;  // never the shared empty cache's
  }
  ~OwnAllocationsScope() {
    if (tag_offset_ != 0) CacheBins::tag_offset(*cache_) = tag_offset_;
  }
  OwnAllocationsScope(const OwnAllocationsScope&) = delete;
  OwnAllocationsScope& operator=(const OwnAllocationsScope&) = delete;

 private:
  [[no_unique_address]] CountOwnAllocations counted_;
  ThreadCache* cache_;
  std::size_t tag_offset_;
};
std::uint64_t live_thread_caches();

void lock_thread_caches_for_fork();
void unlock_thread_caches_after_fork(bool in_child);

}  // namespace poolalloc::internal
