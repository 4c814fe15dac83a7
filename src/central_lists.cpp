#include "central_lists.hpp"

#include <algorithm>

#include "lock.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "span_carving.hpp"

namespace poolalloc::internal {
namespace {

struct alignas(64) ClassList {
  Lock lock;
  Span* partial = nullptr;  // spans with free and used blocks, doubly linked
  Span* spare = nullptr;    // one entirely free span, kept so that a class hovering around a
                            // span boundary does not hand pages to the OS and fault them back
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
  // A span to take blocks from: a partial one first, so that free spans stay free.
  Span* span_with_free_blocks(unsigned cls) {
    if (partial != nullptr) return partial;
    Span* span = spare;
    if (span != nullptr) {
      spare = nullptr;
    } else {
      span = carve_span(cls);
      if (span == nullptr) return nullptr;
      ++counters.spans;
    }
    push_front(*span);
    return span;
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

}  // namespace

BlockChain take_blocks(unsigned cls, std::uint32_t wanted) {
  ClassList& list = g_classes[cls];
  BlockChain chain;
  LockGuard guard(list.lock);
  while (chain.count < wanted) {
    Span* span = list.span_with_free_blocks(cls);
    if (span == nullptr) break;
    while (chain.count < wanted && !span->blocks.full()) chain.push(span->blocks.allocate());
    if (span->blocks.full()) list.unlink(*span);
  }
  list.counters.blocks_out += chain.count;
  list.counters.peak_out = std::max(list.counters.peak_out, list.counters.blocks_out);
  return chain;
}

void give_blocks(unsigned cls, BlockChain chain) {
  ClassList& list = g_classes[cls];
  Span* to_release = nullptr;
  {
    LockGuard guard(list.lock);
    list.counters.blocks_out -= chain.count;
    while (chain.count != 0) {
      void* block = chain.pop();
      Span& span = span_of(block);
      if (span.blocks.full()) list.push_front(span);
      span.blocks.deallocate(block);
      if (!span.blocks.empty()) continue;
      list.unlink(span);
      if (list.spare == nullptr) {
        list.spare = &span;
      } else {
        --list.counters.spans;
        span.next = to_release;
        to_release = &span;
      }
    }
  }
  release_all(to_release);  // outside the class lock: madvise is a system call
}

std::size_t release_empty_spans() {
  std::size_t released = 0;
  for (ClassList& list : g_classes) {
    Span* spare = nullptr;
    {
      LockGuard guard(list.lock);
      std::swap(spare, list.spare);
      if (spare != nullptr) --list.counters.spans;
    }
    if (spare != nullptr) {
      spare->next = nullptr;
      release_all(spare);
      released += kSpanSize;
    }
  }
  return released;
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
