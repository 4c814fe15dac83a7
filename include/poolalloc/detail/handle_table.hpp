// The ids and generations behind Pool<T>'s handles. A handle names an id, not a slot, so that
// compaction can move an object without invalidating its handles: each slot holds one id (a
// permutation of 0 .. slots-1, the identity until something moves) and the generation of that
// id, which changes at every spawn into the slot. A handle is valid while its id's slot is live
// and the generations agree.
//
// Every table starts its generations at a seed of its own, a hash of the count of tables made
// before it, so that a handle from another pool matches no generation here but by chance: for
// a handle whose slot saw n spawns there, with a probability of about n in 4 billion. (Seeds
// that were multiples of one step, without the hash, let pools made a Fibonacci number apart
// start near each other.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace poolalloc::detail {

class HandleTable {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  struct Key {
    std::uint32_t id = kNone;
    std::uint32_t generation = 0;
  };

  HandleTable() : seed_(mix(tables_made_.fetch_add(1, std::memory_order_relaxed))) {}

  // Takes the memory that add_slots(count) needs; throws std::bad_alloc (and changes nothing else)
  // when it cannot be had. Exactly the room needed (12 bytes a slot): push_back alone would double
  // it.
  void reserve(std::uint32_t count) {
    by_slot_.reserve(std::size_t{size_} + count);
    slot_of_id_.reserve(std::size_t{size_} + count);
  }

  // Slots [size, size + count) join, each new one holding the id of the same number. Allocates
  // only what reserve(count) did not.
  void add_slots(std::uint32_t count) {
    reserve(count);
    const std::uint32_t end = size_ + count;
    for (auto slot = static_cast<std::uint32_t>(by_slot_.size()); slot < end; ++slot) {
      by_slot_.push_back({slot, seed_});
      slot_of_id_.push_back(slot);
    }
    size_ = end;
  }

  // Slots [end, size) leave; the entries stay (see by_slot_).
  void remove_slots_from(std::uint32_t end) { size_ = end; }

  // A new object in `slot`: handles taken of the slot's earlier objects stop matching.
  void spawned(std::uint32_t slot) { ++by_slot_[slot].generation; }

  [[nodiscard]] Key key_of(std::uint32_t slot) const { return by_slot_[slot]; }

  // The slot that `key` names if the generations agree, else kNone. The caller checks that the
  // slot is live.
  [[nodiscard]] std::uint32_t slot_of(Key key) const {
    if (key.id >= slot_of_id_.size()) return kNone;
    const std::uint32_t slot = slot_of_id_[key.id];
    return slot < size_ && by_slot_[slot].generation == key.generation ? slot : kNone;
  }

  // The object of slot `from` moved to slot `to`: the two slots trade ids and generations.
  void moved(std::uint32_t from, std::uint32_t to) {
    std::swap(by_slot_[from], by_slot_[to]);
    slot_of_id_[by_slot_[from].id] = from;
    slot_of_id_[by_slot_[to].id] = to;
  }

 private:
  // A bijection of 32-bit numbers whose nearby inputs give unrelated outputs (MurmurHash3's
  // finaliser).
  static constexpr std::uint32_t mix(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
  }

  static inline std::atomic<std::uint32_t> tables_made_{0};

  // Entries beyond size_ are of slots that a shrink took away: they keep their ids and generations
  // for when the slots come back, so that a handle of an object that lived there stays stale.
  std::vector<Key> by_slot_;
  std::vector<std::uint32_t> slot_of_id_;
  std::uint32_t size_ = 0;
  std::uint32_t seed_;
};

}  // namespace poolalloc::detail
