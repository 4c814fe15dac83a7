#include "deferred_operations.hpp"

#include <new>

#include "os.hpp"

namespace poolalloc::internal {

DeferredLog::Chunk* DeferredLog::map_chunk() {
  void* memory = os_map(sizeof(Chunk));
  return memory == nullptr ? nullptr : new (memory) Chunk;
}

// An entry is claimed with one fetch_add on its chunk's count; a thread that claims past the
// end moves to the next chunk, linking a new one in first if there is none (the loser of that
// race unmaps its own). Nothing waits for another thread, so a thread stopped anywhere (by a
// fork, in the child) stops nobody else: its claimed entry is merely never published.
bool DeferredLog::append(const DeferredOperation& operation) {
  Chunk* chunk = tail_.load(std::memory_order_acquire);
  if (chunk == nullptr) chunk = &first_;
  for (;;) {
    const std::size_t i = chunk->claimed.fetch_add(1, std::memory_order_acq_rel);
    if (i < kEntries) {
      chunk->entries[i].operation = operation;
      chunk->entries[i].published.store(true, std::memory_order_release);
      return true;
    }
    Chunk* next = chunk->next.load(std::memory_order_acquire);
    if (next == nullptr) {
      Chunk* fresh = map_chunk();
      if (fresh == nullptr) return false;
      if (chunk->next.compare_exchange_strong(next, fresh, std::memory_order_acq_rel)) {
        next = fresh;
      } else {
        os_unmap(fresh, sizeof(Chunk));
      }
    }
    Chunk* expected = chunk == &first_ ? nullptr : chunk;
    tail_.compare_exchange_strong(expected, next, std::memory_order_acq_rel);
    chunk = next;
  }
}

void DeferredLog::clear() {
  for (Chunk* chunk = &first_; chunk != nullptr;
       chunk = chunk->next.load(std::memory_order_relaxed)) {
    const std::size_t claimed = chunk->claimed.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < claimed && i < kEntries; ++i)
      chunk->entries[i].published.store(false, std::memory_order_relaxed);
    chunk->claimed.store(0, std::memory_order_relaxed);
  }
  tail_.store(nullptr, std::memory_order_release);
}

}  // namespace poolalloc::internal
