#include "central_lists.hpp"

#include <algorithm>

#include "lock.hpp"
#include "pool_region.hpp"
#include "span_carving.hpp"

namespace poolalloc::internal {
namespace {

// The stack of batches holds at most this many bytes of blocks per class.
constexpr std::size_t kStackBytes = std::size_t{512} << 10;
constexpr std::size_t kMaxStackedBatches = 256;

struct alignas(64) ClassList {
  Lock lock;
  std::uint32_t stacked_batches = 0;
  BlockChain batches[kMaxStackedBatches];
  Span* partial = nullptr;  // spans with free blocks and used ones, doubly linked
  ClassCounters counters{};

  void push_front(Span& span) {
    span.prev = nullptr;
    span.next = partial;
    if (partial != nullptr) partial->prev = &span;
    partial = &span;
  }
  void unlink(Span& span) {
    (span.prev != nullptr ? span.prev->next : partial) = span.next;
    if (span.next != nullptr) span.next->prev = span.prev;
  }
  // A span to take blocks from: a partial one, else a newly carved one.
  Span* span_with_free_blocks(unsigned cls) {
    if (partial != nullptr) return partial;
    Span* span = carve_span(cls);
    if (span == nullptr) return nullptr;
    ++counters.spans;
    push_front(*span);
    return span;
  }
  BlockChain carve_blocks(unsigned cls, std::uint32_t wanted) {
    BlockChain chain;
    while (chain.count < wanted) {
      Span* span = span_with_free_blocks(cls);
      if (span == nullptr) break;
      while (chain.count < wanted && !span->blocks.full()) chain.push(span->blocks.allocate());
      if (span->blocks.full()) unlink(*span);
    }
    counters.blocks_out += chain.count;
    counters.peak_out = std::max(counters.peak_out, counters.blocks_out);
    return chain;
  }
  // Puts the blocks back into their spans; returns the spans that became empty, linked
  // through Span::next, for the caller to release once the lock is dropped.
  Span* return_to_spans(BlockChain chain) {
    Span* to_release = nullptr;
    counters.blocks_out -= chain.count;
    while (chain.count != 0) {
      void* block = chain.pop();
      Span& span = span_of(block);
      if (span.blocks.full()) push_front(span);
      span.blocks.deallocate(block);
      span.unpurged = true;
      if (!span.blocks.empty()) continue;
      unlink(span);
      --counters.spans;
      span.next = to_release;
      to_release = &span;
    }
    return to_release;
  }
};

ClassList g_classes[kClassCount];

void release_all(Span* spans) {
  while (spans != nullptr) {
    Span* next = spans->next;
    release_span(*spans);
    spans = next;
  }
}

std::uint32_t stack_capacity(unsigned cls) {
  const std::size_t batch_bytes = std::size_t{batch_size(cls)} * class_size(cls);
  return static_cast<std::uint32_t>(
      std::clamp<std::size_t>(kStackBytes / batch_bytes, 1, kMaxStackedBatches));
}

}  // namespace

BlockChain take_blocks(unsigned cls) {
  ClassList& list = g_classes[cls];
  LockGuard guard(list.lock);
  if (list.stacked_batches != 0) {
    const BlockChain batch = list.batches[--list.stacked_batches];
    list.counters.stacked -= batch.count;
    return batch;
  }
  return list.carve_blocks(cls, batch_size(cls));
}

void give_blocks(unsigned cls, BlockChain chain) {
  ClassList& list = g_classes[cls];
  Span* to_release = nullptr;
  {
    LockGuard guard(list.lock);
    if (chain.count >= batch_size(cls) / 2 && list.stacked_batches < stack_capacity(cls)) {
      list.batches[list.stacked_batches++] = chain;
      list.counters.stacked += chain.count;
      return;
    }
    to_release = list.return_to_spans(chain);
  }
  release_all(to_release);  // outside the class lock: madvise is a system call
}

void empty_central_stacks() {
  for (ClassList& list : g_classes) {
    Span* to_release = nullptr;
    {
      LockGuard guard(list.lock);
      while (list.stacked_batches != 0) {
        const BlockChain batch = list.batches[--list.stacked_batches];
        list.counters.stacked -= batch.count;
        Span* emptied = list.return_to_spans(batch);
        while (emptied != nullptr) {
          Span* next = emptied->next;
          emptied->next = to_release;
          to_release = emptied;
          emptied = next;
        }
      }
    }
    release_all(to_release);
  }
}

BlockChain take_some_blocks(unsigned cls, std::uint32_t wanted) {
  if (wanted >= batch_size(cls)) return take_blocks(cls);
  ClassList& list = g_classes[cls];
  LockGuard guard(list.lock);
  if (list.stacked_batches == 0) return list.carve_blocks(cls, wanted);
  // The first `wanted` blocks of the top batch; the rest stays stacked.
  BlockChain& top = list.batches[list.stacked_batches - 1];
  if (top.count <= wanted) {
    --list.stacked_batches;
    list.counters.stacked -= top.count;
    return top;
  }
  BlockChain taken{top.head, wanted};
  void* last = top.head;
  for (std::uint32_t i = 1; i < wanted; ++i) last = *static_cast<void**>(last);
  top.head = *static_cast<void**>(last);
  top.count -= wanted;
  *static_cast<void**>(last) = nullptr;
  list.counters.stacked -= wanted;
  return taken;
}

void return_blocks_to_spans(unsigned cls, BlockChain chain) {
  ClassList& list = g_classes[cls];
  Span* to_release = nullptr;
  {
    LockGuard guard(list.lock);
    to_release = list.return_to_spans(chain);
  }
  release_all(to_release);
}

void purge_free_blocks() {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    if (class_size(cls) <= kPageSize) continue;  // no page lies wholly past the link
    ClassList& list = g_classes[cls];
    LockGuard guard(list.lock);  // a block of a span's free list stays free meanwhile
    for (Span* span = list.partial; span != nullptr; span = span->next) {
      if (!span->unpurged) continue;  // its free blocks gave their pages away already
      span->unpurged = false;
      span->blocks.for_each_free_block(
          [&](std::byte* block) { release_block_pages(block, class_size(cls)); });
    }
  }
}

ClassCounters class_counters(unsigned cls) {
  ClassList& list = g_classes[cls];
  LockGuard guard(list.lock);
  return list.counters;
}

void lock_central_lists_for_fork() {
  for (ClassList& list : g_classes) list.lock.lock();
}

void unlock_central_lists_after_fork(bool in_child) {
  for (ClassList& list : g_classes) list.lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
