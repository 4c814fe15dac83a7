#include "central_lists.hpp"

#include <algorithm>
#include <atomic>

#include "lock.hpp"
#include "misuse.hpp"
#include "os_memory.hpp"
#include "pool_region.hpp"
#include "span_carving.hpp"

namespace poolalloc::internal {
namespace {

// The stack of batches holds at most this many bytes of blocks per class.
constexpr std::size_t kStackBytes = std::size_t{512} << 10;
constexpr std::size_t kMaxStackedBatches = 256;

// A block of a span that is not full. The span's free list links blocks by their index in the
// span, which keeps a damaged link inside the span: one that names no block handed out, or a
// block without its free mark (a live one), is reported rather than followed.
void* carve_block(Span& span, unsigned cls) {
  const std::uint32_t head = span.blocks.free_list_head();
  if (head == detail::LazyBlockList::kNoBlock) return span.blocks.allocate();
  if (head >= span.blocks.initialised_count()) [[unlikely]]
    report_corrupted_free_list(span.blocks.block_at(head), cls);
  void* block = span.blocks.allocate();
  if (!is_marked_free(block)) [[unlikely]]
    report_corrupted_free_list(block, cls);
  return block;
}

struct alignas(64) ClassList {
  Lock lock;  // first in the lock order (lock.hpp)
  // Blocks given back while the lock was held for fork(), linked through their first word:
  // pushed without the lock, drained into their spans by the next holder.
  std::atomic<void*> orphans{nullptr};
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
      while (chain.count < wanted && !span->blocks.full()) chain.push(carve_block(*span, cls));
      if (span->blocks.full()) unlink(*span);
    }
    counters.blocks_out += chain.count;
    counters.peak_out = std::max(counters.peak_out, counters.blocks_out);
    return chain;
  }
  // Puts the blocks back into their spans; returns the spans that became empty, linked
  // through Span::next, for the caller to release once the lock is dropped. The blocks keep
  // their free marks there (the span's index link takes only the first 4 bytes), so a block
  // freed again while it waits in its span is still recognised.
  Span* return_to_spans(unsigned cls, BlockChain chain) {
    Span* to_release = nullptr;
    counters.blocks_out -= chain.count;
    while (chain.count != 0) {
      void* block = chain.pop(cls);
      Span& span = span_of(block);
      // A block past the bump index was never handed out: a program freed an address it never
      // got (free(p + size) of the last block carved). Accepted, the bump index would hand it
      // out again. The fast path cannot see it (such a block carries no free mark); here, where
      // each block meets its span, the check is one compare.
      if (span.blocks.index_of(block) >= span.blocks.initialised_count())
        report_never_handed_out("free", block, cls);
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
  // Under the lock: the orphaned blocks back into their spans (see return_to_spans).
  Span* drain_orphans(unsigned cls) {
    if (orphans.load(std::memory_order_relaxed) == nullptr) return nullptr;
    BlockChain chain{orphans.exchange(nullptr, std::memory_order_acquire), 0};
    for (void* block = chain.head; block != nullptr; block = next_free(block)) ++chain.count;
    return return_to_spans(cls, chain);
  }
  // Without the lock, and without waiting: the chain joins the orphans.
  void orphan(BlockChain chain) {
    void* tail = chain.head;
    for (std::uint32_t i = 1; i < chain.count; ++i) tail = next_free(tail);
    void* head = orphans.load(std::memory_order_relaxed);
    do {
      mark_free(tail, head);
    } while (!orphans.compare_exchange_weak(head, chain.head, std::memory_order_release,
                                            std::memory_order_relaxed));
  }
};

ClassList g_classes[kClassCount];

// Links list `more` in front of `spans`.
Span* concat(Span* more, Span* spans) {
  while (more != nullptr) {
    Span* next = more->next;
    more->next = spans;
    spans = more;
    more = next;
  }
  return spans;
}

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
  BlockChain chain;
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) return chain;  // held for fork(): the caller forwards to the system
    to_release = list.drain_orphans(cls);
    if (list.stacked_batches != 0) {
      chain = list.batches[--list.stacked_batches];
      list.counters.stacked -= chain.count;
    } else {
      chain = list.carve_blocks(cls, batch_size(cls));
    }
  }
  release_all(to_release);
  return chain;
}

namespace {

// give_blocks, unless the lock is held for fork() (false, the chain untouched).
bool try_give_blocks(unsigned cls, BlockChain chain) {
  ClassList& list = g_classes[cls];
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) return false;
    to_release = list.drain_orphans(cls);
    if (chain.count >= batch_size(cls) / 2 && list.stacked_batches < stack_capacity(cls)) {
      list.batches[list.stacked_batches++] = chain;
      list.counters.stacked += chain.count;
    } else {
      to_release = concat(list.return_to_spans(cls, chain), to_release);
    }
  }
  release_all(to_release);  // outside the class lock: madvise is a system call
  return true;
}

}  // namespace

void give_blocks(unsigned cls, BlockChain chain) {
  if (chain.count != 0 && !try_give_blocks(cls, chain)) g_classes[cls].orphan(chain);
}

void empty_central_stacks() {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    ClassList& list = g_classes[cls];
    Span* to_release = nullptr;
    {
      TryLockGuard guard(list.lock);
      if (!guard.locked()) continue;  // held for fork(): nothing to trim now
      to_release = list.drain_orphans(cls);
      while (list.stacked_batches != 0) {
        const BlockChain batch = list.batches[--list.stacked_batches];
        list.counters.stacked -= batch.count;
        to_release = concat(list.return_to_spans(cls, batch), to_release);
      }
    }
    release_all(to_release);
  }
}

BlockChain take_some_blocks(unsigned cls, std::uint32_t wanted) {
  if (wanted >= batch_size(cls)) return take_blocks(cls);
  ClassList& list = g_classes[cls];
  TryLockGuard guard(list.lock);
  if (!guard.locked()) return {};  // held for fork(): the caller forwards to the system
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
  for (std::uint32_t i = 1; i < wanted; ++i) {
    check_free_block(last, cls);
    last = next_free(last);
  }
  check_free_block(last, cls);
  top.head = next_free(last);
  top.count -= wanted;
  mark_free(last, nullptr);
  list.counters.stacked -= wanted;
  return taken;
}

void return_blocks_to_spans(unsigned cls, BlockChain chain) {
  ClassList& list = g_classes[cls];
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) {
      list.orphan(chain);  // held for fork(): the next holder files them
      return;
    }
    to_release = concat(list.return_to_spans(cls, chain), list.drain_orphans(cls));
  }
  release_all(to_release);
}

void purge_free_blocks() {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    if (class_size(cls) <= kPageSize) continue;  // no page lies wholly past the link
    ClassList& list = g_classes[cls];
    TryLockGuard guard(list.lock);  // a block of a span's free list stays free meanwhile
    if (!guard.locked()) continue;  // held for fork(): nothing to purge now
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
  // Held for fork(), the counters cannot change: read them as they are. (The forking thread
  // itself may be asking, from another library's fork handler.)
  TryLockGuard guard(list.lock);
  return list.counters;
}

void lock_central_lists_for_fork() {
  for (ClassList& list : g_classes) list.lock.lock_for_fork();
}

void unlock_central_lists_after_fork(bool in_child) {
  for (ClassList& list : g_classes) list.lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
