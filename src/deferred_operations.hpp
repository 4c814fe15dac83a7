// The debug heap's allocations and frees made while its lock is held for fork(): a log that
// any thread appends to without a lock, without waiting and without a fixed bound (chunks of
// memory of its own, mapped as it grows and kept for the next fork), read in order by the
// lock's next holder (debug_heap.cpp holds the protocol that says who may read and clear it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "block_registry.hpp"

namespace poolalloc::internal {

// All zeros by default, so that the log's first chunk takes no room in the library's file.
struct DeferredOperation {
  bool is_free = false;
  BlockRecord record;             // an allocation's record; a free's pointer in address
  std::size_t expected_size = 0;  // of a free: a sized delete's size, or SIZE_MAX
  const void* site = nullptr;     // of a free
};

class DeferredLog {
 public:
  // Any thread, no lock. False only when no memory could be had for a new chunk.
  bool append(const DeferredOperation& operation);
  // The published operations in the order of their appends; one still being appended is
  // skipped (so is one that a thread which does not exist in a fork() child left unfinished).
  template <class Visit>
  void for_each(Visit visit) const {
    for (const Chunk* chunk = &first_; chunk != nullptr;
         chunk = chunk->next.load(std::memory_order_acquire)) {
      const std::size_t claimed = chunk->claimed.load(std::memory_order_acquire);
      for (std::size_t i = 0; i < claimed && i < kEntries; ++i) {
        const Entry& entry = chunk->entries[i];
        if (entry.published.load(std::memory_order_acquire)) visit(entry.operation);
      }
    }
  }
  [[nodiscard]] bool empty() const { return first_.claimed.load(std::memory_order_acquire) == 0; }
  // Only while no append is under way: forgets every operation, keeping the chunks.
  void clear();

 private:
  struct Entry {
    std::atomic<bool> published{false};  // set last, once `operation` is written
    DeferredOperation operation;
  };
  static constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
  static constexpr std::size_t kEntries =
      (kChunkBytes - 2 * sizeof(std::atomic<std::size_t>)) / sizeof(Entry);
  struct Chunk {
    std::atomic<Chunk*> next{nullptr};
    std::atomic<std::size_t> claimed{0};  // entries taken, counting the tries past the end
    Entry entries[kEntries];
  };
  static Chunk* map_chunk();

  Chunk first_;
  // The chunk that appends go to, or one before it; nullptr for first_ (so that the log is all
  // zeros at start).
  std::atomic<Chunk*> tail_{nullptr};
};

}  // namespace poolalloc::internal
