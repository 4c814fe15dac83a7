#include "block_registry.hpp"

#include <bit>

#include "os.hpp"

namespace poolalloc::internal {

std::size_t BlockRegistry::slot_of(std::uintptr_t address) const {
  // Fibonacci hashing of the address without its always-zero low bits.
  return static_cast<std::size_t>(((address >> 4) * 0x9e3779b97f4a7c15ull) >>
                                  (64 - std::countr_zero(capacity_)));
}

bool BlockRegistry::resize(std::size_t capacity) {
  auto* slots = static_cast<BlockRecord*>(os_map(capacity * sizeof(BlockRecord)));
  if (slots == nullptr) return false;
  BlockRecord* old_slots = slots_;
  const std::size_t old_capacity = capacity_;
  slots_ = slots;
  capacity_ = capacity;
  count_ = 0;
  tombstones_ = 0;
  for (std::size_t i = 0; i < old_capacity; ++i)
    if (old_slots[i].address > kTombstone) insert(old_slots[i]);
  if (old_slots != nullptr) os_unmap(old_slots, old_capacity * sizeof(BlockRecord));
  return true;
}

bool BlockRegistry::insert(const BlockRecord& record) {
  // Double when live records fill a quarter; otherwise rehash in place to drop tombstones.
  if ((count_ + tombstones_ + 1) * 2 > capacity_ &&
      !resize(capacity_ == 0                 ? kMinCapacity
              : (count_ + 1) * 4 > capacity_ ? capacity_ * 2
                                             : capacity_))
    return false;
  std::size_t i = slot_of(record.address);
  while (slots_[i].address > kTombstone) i = (i + 1) & (capacity_ - 1);
  if (slots_[i].address == kTombstone) --tombstones_;
  slots_[i] = record;
  ++count_;
  return true;
}

const BlockRecord* BlockRegistry::find(std::uintptr_t address) const {
  if (capacity_ == 0) return nullptr;
  for (std::size_t i = slot_of(address); slots_[i].address != kEmpty;
       i = (i + 1) & (capacity_ - 1)) {
    if (slots_[i].address == address) return &slots_[i];
  }
  return nullptr;
}

BlockRecord BlockRegistry::remove(std::uintptr_t address) {
  auto* slot = const_cast<BlockRecord*>(find(address));
  if (slot == nullptr) return {};
  const BlockRecord record = *slot;
  slot->address = kTombstone;
  --count_;
  ++tombstones_;
  // Halve when live records fill less than a sixteenth, so that the table of a peak goes back to
  // the OS with the blocks (the gap to the doubling at a quarter keeps it from bouncing; each
  // rehash follows at least capacity/16 removals). Where no memory is to be had, it stays.
  if (capacity_ > kMinCapacity && count_ * 16 < capacity_) resize(capacity_ / 2);
  return record;
}

const BlockRecord* BlockRegistry::find_containing(std::uintptr_t address) const {
  for (std::size_t i = 0; i < capacity_; ++i) {
    const BlockRecord& record = slots_[i];
    if (record.address > kTombstone && address - record.address < record.size) return &record;
  }
  return nullptr;
}

}  // namespace poolalloc::internal
