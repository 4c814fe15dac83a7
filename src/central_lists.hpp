// The central lists, shared by all threads behind one lock per size class. Thread caches
// refill from them and flush to them in batches, so a lock is taken once per batch:
// - a bounded stack of whole batches that threads flushed, handed to the next refill as they
//   are, in O(1) (this is what makes one thread's frees cheap for another thread's mallocs);
// - behind it, the class's spans with free blocks, each carved by the paper's pool, which
//   take back what overflows the stack and serve what it cannot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "free_block_marks.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {

// A chain of free blocks, linked and marked as free_block_marks.hpp says: how batches travel,
// in the same form as the thread caches' lists.
struct BlockChain {
  void* head = nullptr;
  std::uint32_t count = 0;

  void push(void* block) {
    mark_free(block, head);
    head = block;
    ++count;
  }
  // The head, checked first to be a free block of class `cls` (reported otherwise), so that a
  // forged link is never followed. The block keeps its mark: clear_mark() it to hand it out.
  void* pop(unsigned cls) {
    void* block = head;
    check_free_block(block, cls);
    head = next_free(block);
    --count;
    return block;
  }
};

// How many blocks of class `cls` move between a thread cache and the central lists at once:
// about 32 KiB of them, at least 2 and at most 512.
constexpr std::uint32_t batch_size(unsigned cls) {
  const std::uint32_t blocks = 32 * 1024 / class_size(cls);
  return blocks < 2 ? 2 : blocks > 512 ? 512 : blocks;
}

// About batch_size(cls) blocks of class `cls` (a stacked batch, or blocks carved from spans);
// fewer, maybe none, when the region is exhausted; none, without waiting, while the class's
// lock is held for fork(). A stacked batch may hold more than batch_size(cls) blocks.
BlockChain take_blocks(unsigned cls);

// At most `wanted` blocks (a thread cache that is still small): carved from spans, or split off
// the top stacked batch. take_blocks when `wanted` is a batch or more.
BlockChain take_some_blocks(unsigned cls, std::uint32_t wanted);

// Takes the blocks back: a chain of at least half a batch onto the stack while it has room,
// anything else into the blocks' spans. A span that becomes empty goes back to span carving.
// Never waits: while the class's lock is held for fork(), the blocks wait in a lock-free list of
// the class (walking the chain once), which the next holder of the lock drains into the spans.
void give_blocks(unsigned cls, BlockChain chain);

// malloc_trim and decay: empty every stack of batches into the spans (skipping classes whose
// lock is held for fork()).
void empty_central_stacks();

// Puts the blocks back into their spans, past the stack of batches (a thread cache emptied by
// decay: its next refills should come from few spans, not from the blocks it gave back).
void return_blocks_to_spans(unsigned cls, BlockChain chain);

// malloc_trim and decay: the pages of the free blocks of partly used spans go back to the OS,
// all but the page that holds each block's link (classes above a page). One block still
// in use, or in a thread cache, would otherwise keep its whole span resident: 128 KiB for a
// 32 KiB block.
void purge_free_blocks();

struct ClassCounters {
  std::uint64_t blocks_out;  // blocks taken from spans and not given back
  std::uint64_t peak_out;
  std::uint64_t stacked;  // of blocks_out, how many wait in the stack of batches
  std::uint64_t spans;
};
ClassCounters class_counters(unsigned cls);

void lock_central_lists_for_fork();
void unlock_central_lists_after_fork(bool in_child);

}  // namespace poolalloc::internal
