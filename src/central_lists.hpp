// The central lists: per size class, the spans that still have free blocks, shared by all
// threads behind one lock per class. Thread caches refill from them and flush to them in
// batches, so each lock is taken once per batch, not once per block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

// A chain of blocks linked through their first word: how batches travel.
struct BlockChain {
  void* head = nullptr;
  std::uint32_t count = 0;

  void push(void* block) {
    *static_cast<void**>(block) = head;
    head = block;
    ++count;
  }
  void* pop() {
    void* block = head;
    head = *static_cast<void**>(block);
    --count;
    return block;
  }
};

// Up to `wanted` blocks of class `cls`, carving new spans as needed; fewer (maybe none) when
// the region is exhausted.
BlockChain take_blocks(unsigned cls, std::uint32_t wanted);

// Gives the blocks back to their spans. A span that becomes empty is kept for reuse when it is
// its class's only empty span, and otherwise handed back to the OS.
void give_blocks(unsigned cls, BlockChain chain);

// Hands every empty span back to the OS (malloc_trim); returns how many bytes that released.
std::size_t release_empty_spans();

struct ClassCounters {
  std::uint64_t blocks_out;  // blocks taken from spans and not given back
  std::uint64_t peak_out;
  std::uint64_t spans;
};
ClassCounters class_counters(unsigned cls);

void lock_central_lists_for_fork();
void unlock_central_lists_after_fork(bool in_child);

}  // namespace poolalloc::internal
