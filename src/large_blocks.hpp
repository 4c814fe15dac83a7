// Large blocks: a cache of freed glibc blocks above the pools' largest class, in front of glibc.
// A game that allocates and frees buffers of 64 KiB to 1 MiB every frame made glibc grow and
// trim its heap with brk, or map and unmap them, inside its calls (a system call of more than
// 10 us each, and the page faults of the memory it got back); a freed block kept here is handed
// to the next malloc of its size class as it is, with no system call and no page touched.
//
// - Classes: four per doubling, bound b(k) = (4 + k % 4) << (k / 4 + 13), from 40 KiB (k = 1) to
//   4 MiB (k = 28). A request of n bytes, 32 KiB < n <= 4 MiB, takes a block of the smallest
//   class k with b(k) >= n; a freed block of usable size u goes to the largest class with
//   b(k) <= u, so that any block of a class fits any request of it. A request that misses asks
//   glibc for b(k) bytes, so that its block comes back to its own class when freed (at most a
//   quarter more than asked, what malloc_usable_size then reports).
// - free(p) outside the pool region: p is kept when glibc's chunk header says it is a block in
//   use of glibc's main heap of a cached class (the checks glibc's own free makes of such a
//   block, large_blocks.cpp), the decay thread runs (its steps give the blocks back), and the cache
//   has room: at most kSlotsPerClass blocks per class, and in all a quarter of glibc's main heap,
//   between 4 and 32 MiB (kHeapShare, below). Anything else goes to glibc's free, which judges a
//   foreign pointer as before. A block freed again while it waits here is reported and the process
//   aborts.
// - Only malloc and operator new (and the aligned forms asked for 16 bytes or less) take cached
//   blocks; calloc (which would have to clear one), realloc and larger alignments go to glibc,
//   which takes any block the cache handed out as the chunk of its own that it is.
// - Memory over time: each decay step gives back to glibc the blocks of each class that no
//   malloc took since the previous step (the class's low-water mark); malloc_trim gives back
//   all. Both call glibc's free outside the lock.
//
// Linux only: the cache reads glibc's chunk headers. On Windows (the inline functions at the end)
// every request above the pools goes to the C runtime's heap, and every free outside the pool
// region back to it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "platform.hpp"
#include "system_forwarding.hpp"

namespace poolalloc::internal {

// The largest request the cache serves. The most it keeps: a quarter of glibc's main heap (from
// where the program break was at start-up to where it is), at least 4 MiB and at most 32 MiB. A
// block waiting here is memory that the program's requests of other sizes cannot reuse, so what
// may wait is a share of the program's own heap rather than 32 MiB whatever its size (ruby's
// cache held 19 MiB of a 120 MiB program, 17 blocks that served 20 requests). An eighth kept 91 %
// of the cache's hits in the latency benchmark, and its level changes took 5.9 ms at the median
// where a quarter's take 4.8 (4.6 with 32 MiB); the 4 MiB let a small program's few large buffers
// of each frame wait.
inline constexpr std::size_t kLargestCachedRequest = std::size_t{4} << 20;
inline constexpr std::size_t kHeapShare = 4;
inline constexpr std::size_t kMinHeldBytes = std::size_t{4} << 20;
inline constexpr std::size_t kMaxHeldBytes = std::size_t{32} << 20;
inline constexpr std::uint32_t kSlotsPerClass = 32;

struct LargeBlockStats {
  std::uint64_t reused;  // mallocs served from the cache since start-up
  std::uint64_t blocks;  // blocks held now
  std::uint64_t bytes;   // their usable sizes
  // Their chunks' sizes (usable size and header word): what glibc counts in use while they wait,
  // and would count free had they gone back to it.
  std::uint64_t chunk_bytes;
};

#if POOLALLOC_LINUX
// At initialisation, before glibc's main heap grows: notes where it begins.
void init_large_blocks();

// malloc(size) that the pools do not serve: a cached block for a size in the cache's range,
// else glibc's.
void* allocate_large(std::size_t size);

// free(p) of a pointer outside the pool region (nullptr included): kept, or glibc's free.
void free_outside_pools(void* p);

// `operation` (realloc, or free without the decay thread: in a child of fork(), which keeps its
// parent's cached blocks) takes p, a pointer outside the pool region: reports it if it waits in
// the cache, freed already.
void report_if_cached(void* p, const char* operation);

// A decay step: gives back the blocks that no malloc took since the previous step. True while
// the cache holds blocks (a later step may give them back).
bool decay_large_blocks();

// malloc_trim: gives back every cached block.
void release_large_blocks();

LargeBlockStats large_block_stats();

void lock_large_blocks_for_fork();
void unlock_large_blocks_after_fork(bool in_child);
#else
inline void init_large_blocks() {}
inline void* allocate_large(std::size_t size) {
  return system_malloc(size);
}
inline void free_outside_pools(void* p) {
  if (p == nullptr) return;
  discharge_system_block(p);
  system_free(p);
}
inline void report_if_cached(void*, const char*) {}
inline bool decay_large_blocks() {
  return false;
}
inline void release_large_blocks() {}
inline LargeBlockStats large_block_stats() {
  return {};
}
#endif

}  // namespace poolalloc::internal
