// The central lists, shared by all threads behind one lock per bin (a size class of a memory
// tag, bins.hpp; the untagged bins are the classes). What this file says of a class holds of
// each bin. Thread caches
// refill from them and flush to them in batches, so a lock is taken once per batch:
// - a bounded stack of free blocks (pointers, as in the thread caches) that threads gave back,
//   handed to the next refill with one copy (this is what makes one thread's frees cheap for
//   another thread's mallocs);
// - behind it, the class's spans with free blocks (span_blocks.hpp: a bump index and a bitmap
//   of the blocks that came back, handed out lowest first), which take back what overflows the
//   stack and serve what it cannot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bins.hpp"
#include "os.hpp"

namespace poolalloc::internal {

// How many blocks of class `cls` move between a thread cache and the central lists at once:
// about 32 KiB of them, at least 2 and at most 512.
constexpr std::uint32_t batch_size(unsigned cls) {
  const std::uint32_t blocks = 32 * 1024 / class_size(cls);
  return blocks < 2 ? 2 : blocks > 512 ? 512 : blocks;
}

// Fills blocks[0, n) with up to `wanted` free blocks of bin `bin`, each with its free mark
// (blocks has room for `wanted`, and all of it may be written), and returns n: the latest given
// back first, then blocks carved from spans. Carving a never-used block writes its free mark, the
// first touch of its page unless poolalloc wrote into that page before (Span::written_pages); such
// first touches stop at `first_touches_most`. Fewer, maybe none, when the region is exhausted;
// none, without waiting, while the class's lock is held for fork().
std::uint32_t take_blocks(unsigned bin, void** blocks, std::uint32_t wanted,
                          std::uint32_t first_touches_most = UINT32_MAX);

// The pages a thread cache's refill touches first at most: one. A refill of half a bin of
// never-used blocks faulted in up to 16 pages inside one malloc call (65 us on a VM, where a
// fault costs about 4); now a malloc faults in at most two pages, the one its refill's marks
// touch and one of the allocator's own records (a span's bitmap, the bin's slots), and the
// program's own first writes fault in the rest of its blocks, as they would under glibc.
inline constexpr std::uint32_t kFirstTouchesPerRefill = 1;

// Takes back blocks[0, count), free blocks of bin `bin` with their free marks: onto the
// bin's stack while it has room, the rest into their spans. A span that becomes empty goes
// back to span carving. Never waits: while the class's lock is held for fork(), the blocks wait
// in a lock-free list of the class, which the next holder of the lock drains into the spans.
void give_blocks(unsigned bin, void* const* blocks, std::uint32_t count);

// malloc_trim and decay: empty the stack of every bin of the registered tags into the spans, at
// most `most_blocks` blocks in all, the lowest bins first (skipping bins whose lock is held for
// fork()); true if any held a block.
bool empty_central_stacks(std::uint32_t most_blocks = UINT32_MAX);

// Bytes of the blocks that wait in the central stacks of all classes.
std::size_t central_stacks_bytes();

// Puts the blocks back into their spans, past the stack (a thread cache emptied by decay: its
// next refills should come from few spans, not from the blocks it gave back). `purged`: their
// pages went back to the OS since they were taken (purge_free_blocks).
void return_blocks_to_spans(unsigned bin, void* const* blocks, std::uint32_t count,
                            bool purged = false);

// malloc_trim and decay: the pages of the free blocks of partly used spans go back to the OS,
// all but the page that holds each block's link (classes above a page). One block still
// in use, or in a thread cache, would otherwise keep its whole span resident: 128 KiB for a
// 32 KiB block.
void purge_free_blocks();

struct ClassCounters {
  std::uint64_t blocks_out;  // blocks taken from spans and not given back
  std::uint64_t peak_out;
  std::uint64_t stacked;  // of blocks_out, how many wait in the stack, or in the orphan list
                          // (given back while fork() held the lock; give_blocks)
  std::uint64_t spans;
};
// Of bin `bin` (a class, for the untagged bins).
ClassCounters class_counters(unsigned bin);
// The most blocks out of their spans at once, over all classes.
std::uint64_t peak_blocks_out();

// As tag `tag` is registered: maps its bins' stacks (address space, until they reach their
// pages). False when no memory could be had.
bool map_tag_stacks(unsigned tag);

void lock_central_lists_for_fork();
void unlock_central_lists_after_fork(bool in_child);

}  // namespace poolalloc::internal
