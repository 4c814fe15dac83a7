#include "large_blocks.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "decay_requests.hpp"
#include "lock.hpp"
#include "misuse.hpp"
#include "os.hpp"
#include "size_classes.hpp"
#include "system_forwarding.hpp"

namespace poolalloc::internal {
namespace {

// Classes 1 to kClasses (large_blocks.hpp); class 0 (32 KiB) serves no request.
constexpr unsigned kClasses = 28;

constexpr std::size_t class_bound(unsigned k) {
  return std::size_t{4 + k % 4} << (k / 4 + 13);
}
static_assert(class_bound(0) == kLargestClassSize);
static_assert(class_bound(kClasses) == kLargestCachedRequest);

// The largest class whose bound is at most u (u >= 32 KiB).
constexpr unsigned floor_class(std::size_t u) {
  const unsigned top = static_cast<unsigned>(std::bit_width(u)) - 1;
  return (top - 15) * 4 + static_cast<unsigned>((u >> (top - 2)) & 3);
}
// The smallest class whose bound is at least n (n > 32 KiB).
constexpr unsigned ceil_class(std::size_t n) {
  return floor_class(n - 1) + 1;
}
static_assert(ceil_class(kLargestClassSize + 1) == 1 && floor_class(class_bound(1)) == 1);
static_assert(ceil_class(kLargestCachedRequest) == kClasses);
static_assert(floor_class(class_bound(kClasses + 1) - 1) == kClasses);

// glibc's chunk header (malloc/malloc.c): the word before a block is its chunk's size, a
// multiple of 16, with three flags in its low bits. The next chunk's header follows the block;
// its PREV_INUSE bit says whether this chunk is in use.
constexpr std::size_t kPrevInUse = 1, kIsMmapped = 2, kNonMainArena = 4, kFlags = 7;

// The usable size of p by glibc's chunk header, when p is a block in use of glibc's main heap
// that a cached class takes; 0 for anything else, which goes to glibc's free as before. The
// checks are those glibc's free makes before it acts on a block of its main heap (the block's
// alignment, its size's, the chunk lies below the top of the heap, which ends at the program
// break, the next chunk's size and its PREV_INUSE bit, and, where the next chunk is free, the
// size that the chunk after it records), so that a pointer glibc would abort on fails one of
// them, and a block that glibc has free already (freed again after the cache gave it back) fails
// the PREV_INUSE check. Mapped chunks and those of glibc's other arenas (threads' heaps) go
// to glibc: its free checks little of them (it unmaps any page-aligned chunk), so no check
// here could match what it does with a pointer that is not its own. The words read are those
// glibc's free reads; the next chunks' headers only for a size within the cached range.
std::size_t cacheable_usable_size(const void* p) {
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  if (block % 16 != 0) return 0;
  const std::size_t field = static_cast<const std::size_t*>(p)[-1];
  const std::size_t size = field & ~kFlags;
  const std::size_t usable = size - sizeof(std::size_t);
  if ((field & (kIsMmapped | kNonMainArena)) != 0 || size % 16 != 0 || usable < class_bound(1) ||
      usable >= class_bound(kClasses + 1))
    return 0;
  const std::uintptr_t heap_end = os_program_break();
  const std::uintptr_t next_chunk = block - 2 * sizeof(std::size_t) + size;
  if (next_chunk + 4 * sizeof(std::size_t) > heap_end) return 0;
  const std::size_t next = reinterpret_cast<const std::size_t*>(next_chunk)[1];
  const std::size_t next_size = next & ~kFlags;
  if ((next & kPrevInUse) == 0 || next_size <= 2 * sizeof(std::size_t)) return 0;
  // A free next chunk, which glibc's free would merge with the block, must say so where glibc
  // checks it before it unlinks it: the chunk after it records its size as the size before it.
  // (The top chunk, which ends the heap, has no chunk after it.)
  const std::uintptr_t after_next = next_chunk + next_size;
  if (after_next + 2 * sizeof(std::size_t) <= heap_end) {
    const auto* after = reinterpret_cast<const std::size_t*>(after_next);
    if ((after[1] & kPrevInUse) == 0 && after[0] != next_size) return 0;
  }
  return usable;
}

struct CachedClass {
  void* blocks[kSlotsPerClass];         // oldest first
  std::uint32_t sizes[kSlotsPerClass];  // usable sizes (below 5 MiB)
  std::uint32_t count;
  std::uint32_t low_water;  // the fewest blocks since the last decay step
};

Lock g_lock;  // sixth in the lock order (lock.hpp): nothing else is taken or called under it
CachedClass g_classes[kClasses + 1];  // by class; [0] unused
std::size_t g_held_bytes = 0;
// The program break at start-up, where glibc's main heap begins (init_large_blocks).
constinit std::atomic<std::uintptr_t> g_heap_start{0};
// Read without the lock by malloc (whether to look) and by the statistics.
std::atomic<std::uint64_t> g_held_blocks{0};
std::atomic<std::uint64_t> g_held_bytes_shown{0};
std::atomic<std::uint64_t> g_reused{0};

// Under the lock: the counters after a change of g_held_bytes by `blocks` blocks.
void publish_held(std::int64_t blocks) {
  g_held_blocks.fetch_add(static_cast<std::uint64_t>(blocks), std::memory_order_relaxed);
  g_held_bytes_shown.store(g_held_bytes, std::memory_order_relaxed);
}

// Takes a block of class k, or else of the class above (at most a quarter larger), or nullptr.
void* take(unsigned k) {
  TryLockGuard guard(g_lock);
  if (!guard.locked()) return nullptr;  // held for fork(): glibc serves
  if (g_classes[k].count == 0 && k < kClasses) ++k;
  CachedClass& c = g_classes[k];
  if (c.count == 0) return nullptr;
  --c.count;
  c.low_water = std::min(c.low_water, c.count);
  g_held_bytes -= c.sizes[c.count];
  publish_held(-1);
  g_reused.fetch_add(1, std::memory_order_relaxed);
  return c.blocks[c.count];
}

// Under the lock: reports p, of usable size `usable`, if it waits in the cache (freed already:
// a second free, or a realloc, would hand it to two owners). At most kSlotsPerClass compares,
// in the class that p's header names.
void report_if_waiting(const CachedClass& c, void* p, std::size_t usable, const char* operation) {
  if (std::find(c.blocks, c.blocks + c.count, p) != c.blocks + c.count)
    report_double_free_outside_pools(operation, p, usable);
}

// The most the cache keeps while glibc's main heap ends at `heap_end` (large_blocks.hpp).
std::size_t held_bound(std::uintptr_t heap_end) {
  const std::uintptr_t start = g_heap_start.load(std::memory_order_relaxed);
  const std::size_t heap = heap_end > start ? heap_end - start : 0;
  return std::clamp(heap / kHeapShare, kMinHeldBytes, kMaxHeldBytes);
}

// Keeps p (usable size `usable`) if its class and the cache have room.
bool keep(void* p, std::size_t usable) {
  const unsigned k = floor_class(usable);
  const std::size_t bound = held_bound(os_program_break());
  TryLockGuard guard(g_lock);
  if (!guard.locked()) return false;
  CachedClass& c = g_classes[k];
  report_if_waiting(c, p, usable, "free");
  if (c.count == kSlotsPerClass || g_held_bytes + usable > bound) return false;
  c.blocks[c.count] = p;
  c.sizes[c.count] = static_cast<std::uint32_t>(usable);
  ++c.count;
  g_held_bytes += usable;
  publish_held(1);
  return true;
}

// Gives back the `all` blocks of each class, or those that no malloc took since the last step;
// true when blocks remain. One class at a time: its oldest blocks are copied out under the
// lock and handed to glibc outside it.
bool give_back(bool all) {
  bool remain = false;
  for (unsigned k = 1; k <= kClasses; ++k) {
    void* blocks[kSlotsPerClass];
    std::uint32_t n = 0;
    {
      TryLockGuard guard(g_lock);
      if (!guard.locked()) return true;  // held for fork(): maybe at the next step
      CachedClass& c = g_classes[k];
      n = all ? c.count : c.low_water;
      std::memcpy(blocks, c.blocks, n * sizeof(void*));
      for (std::uint32_t i = 0; i < n; ++i) g_held_bytes -= c.sizes[i];
      c.count -= n;
      std::memmove(c.blocks, c.blocks + n, c.count * sizeof(void*));
      std::memmove(c.sizes, c.sizes + n, c.count * sizeof(std::uint32_t));
      c.low_water = c.count;
      if (n != 0) publish_held(-static_cast<std::int64_t>(n));
      remain |= c.count != 0;
    }
    for (std::uint32_t i = 0; i < n; ++i) system_free(blocks[i]);
  }
  return remain;
}

}  // namespace

void init_large_blocks() {
  g_heap_start.store(os_program_break(), std::memory_order_relaxed);
}

void* allocate_large(std::size_t size) {
  if (size <= kLargestClassSize || size > kLargestCachedRequest) return system_malloc(size);
  const unsigned k = ceil_class(size);
  if (g_held_blocks.load(std::memory_order_relaxed) != 0) {
    if (void* block = take(k)) {
      if (g_tags_pushed.load(std::memory_order_relaxed)) charge_system_block(block, size);
      return block;
    }
  }
  return system_malloc_rounded(size, class_bound(k));
}

void free_outside_pools(void* p) {
  if (p == nullptr) return;
  discharge_system_block(p);
  // Kept only while the decay thread runs: its steps give the blocks back, whatever the program
  // does next (a program without it gives its large blocks to glibc as they are freed).
  if (decay_runs_in_background()) {
    const std::size_t usable = cacheable_usable_size(p);
    if (usable != 0 && keep(p, usable)) {
      note_decay_work();
      return;
    }
  } else {
    report_if_cached(p, "free");  // a child of fork() keeps its parent's cached blocks
  }
  system_free(p);
}

void report_if_cached(void* p, const char* operation) {
  if (p == nullptr || g_held_blocks.load(std::memory_order_relaxed) == 0) return;
  const std::size_t usable = cacheable_usable_size(p);
  if (usable == 0) return;
  TryLockGuard guard(g_lock);
  if (guard.locked()) report_if_waiting(g_classes[floor_class(usable)], p, usable, operation);
}

bool decay_large_blocks() {
  if (g_held_blocks.load(std::memory_order_relaxed) == 0) return false;
  return give_back(false);
}

void release_large_blocks() {
  give_back(true);
}

LargeBlockStats large_block_stats() {
  const std::uint64_t blocks = g_held_blocks.load(std::memory_order_relaxed);
  const std::uint64_t bytes = g_held_bytes_shown.load(std::memory_order_relaxed);
  return {g_reused.load(std::memory_order_relaxed), blocks, bytes,
          bytes + blocks * sizeof(std::size_t)};
}

void lock_large_blocks_for_fork() {
  g_lock.lock_for_fork();
}

void unlock_large_blocks_after_fork(bool in_child) {
  g_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
