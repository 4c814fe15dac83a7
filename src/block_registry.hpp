// The debug heap's record of every live block, kept apart from the blocks: an open-addressing
// hash table in memory of its own, so that a stray write into a block cannot corrupt it and a
// pointer that is not a live block is recognised without touching the memory it points to.
// Not thread-safe: the debug heap holds its lock around every use.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

struct BlockRecord {
  std::uintptr_t address = 0;  // what malloc returned
  std::size_t size = 0;        // what was asked for
  const void* allocated_at = nullptr;
  std::size_t front = 0;  // bytes before the block (its alignment, at least the guard bytes):
                          // the underlying block starts there
};

class BlockRegistry {
 public:
  // False when no memory could be had for the table.
  bool insert(const BlockRecord& record);
  // Removes and returns the record of `address`; a record with address 0 when there is none.
  BlockRecord remove(std::uintptr_t address);
  [[nodiscard]] const BlockRecord* find(std::uintptr_t address) const;
  // The live block that `address` points into (O(blocks): for error reports only).
  [[nodiscard]] const BlockRecord* find_containing(std::uintptr_t address) const;
  [[nodiscard]] std::size_t size() const { return count_; }

  template <class Visit>
  void for_each(Visit visit) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].address > kTombstone) visit(slots_[i]);
  }

 private:
  static constexpr std::uintptr_t kEmpty = 0, kTombstone = 1;
  static constexpr std::size_t kMinCapacity = 4096;
  [[nodiscard]] std::size_t slot_of(std::uintptr_t address) const;
  // Moves the live records into a table of `capacity` slots; false when it cannot be had.
  bool resize(std::size_t capacity);

  BlockRecord* slots_ = nullptr;
  std::size_t capacity_ = 0;  // a power of two
  std::size_t count_ = 0;
  std::size_t tombstones_ = 0;
};

}  // namespace poolalloc::internal
