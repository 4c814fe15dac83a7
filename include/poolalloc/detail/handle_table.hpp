// The ids and generations behind Pool<T>'s handles. A handle names an id, not a slot, so that
// compaction can move an object without invalidating its handles: each slot holds one id (a
// permutation of 0 .. slots-1, the identity until something moves), and each id an entry of 16
// bytes: its generation, which changes at every spawn of the id, its slot, and the address of its
// object while that lives. Resolving a handle is then what a slot map does: one index and one
// compare (of the generation; a dead id's address is null), with no load that waits on another.
//
// Every table starts its generations at a seed of its own, a hash of the count of tables made
// before it plus a value drawn once a process (from the clocks and the address of a static, which
// address space randomisation moves), so that a handle from another pool, of this run or of
// another (a saved game, a server), matches no generation here but by chance: for a handle whose
// id saw n spawns there, with a probability of about n in 4 billion. (Seeds that were multiples
// of one step, without the hash, let pools made a Fibonacci number apart start near each other;
// the count alone gave the same seeds in every run.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace poolalloc::detail {

// What a handle holds: an id and a generation. Default: no id.
struct HandleKey {
  std::uint32_t id = UINT32_MAX;
  std::uint32_t generation = 0;
};

template <class T>
class HandleTable {
 public:
  using Key = HandleKey;

  HandleTable()
      : seed_(mix(process_salt() + tables_made_.fetch_add(1, std::memory_order_relaxed))) {}

  // Takes the memory that add_slots(count) needs; throws std::bad_alloc (and changes nothing else)
  // when it cannot be had. Exactly the room needed (20 bytes a slot): push_back alone would double
  // it.
  void reserve(std::uint32_t count) {
    by_id_.reserve(std::size_t{size_} + count);
    id_of_slot_.reserve(std::size_t{size_} + count);
  }

  // Slots [size, size + count) join, each new one holding the id of the same number. Allocates
  // only what reserve(count) did not.
  void add_slots(std::uint32_t count) {
    reserve(count);
    const std::uint32_t end = size_ + count;
    for (auto slot = static_cast<std::uint32_t>(id_of_slot_.size()); slot < end; ++slot) {
      by_id_.push_back({seed_, slot, nullptr});
      id_of_slot_.push_back(slot);
    }
    size_ = end;
  }

  // Slots [end, size), all free, leave; their ids and entries stay (see by_id_).
  void remove_slots_from(std::uint32_t end) { size_ = end; }

  // How many ids have ever been (the pool's largest capacity): every id below names an entry.
  [[nodiscard]] std::uint32_t ids() const { return static_cast<std::uint32_t>(by_id_.size()); }

  [[nodiscard]] std::uint32_t id_of(std::uint32_t slot) const { return id_of_slot_[slot]; }
  [[nodiscard]] std::uint32_t slot_of(std::uint32_t id) const { return by_id_[id].slot; }
  [[nodiscard]] std::uint32_t generation_of(std::uint32_t id) const {
    return by_id_[id].generation;
  }
  // The object of `id` while it lives (from when its constructor returned to when its destructor
  // did), else nullptr.
  [[nodiscard]] T* object_of(std::uint32_t id) const { return by_id_[id].object; }

  // A new object in `slot`: handles taken of the id's earlier objects stop matching. Returns the
  // id, whose object the caller sets once built.
  std::uint32_t spawned(std::uint32_t slot) {
    const std::uint32_t id = id_of(slot);
    ++by_id_[id].generation;
    return id;
  }
  // A new object in the free slot of `key.id`, under `key`'s generation (a handle saved elsewhere
  // that is to resolve again).
  void spawned_as(Key key) { by_id_[key.id].generation = key.generation; }

  void set_object(std::uint32_t id, T* object) { by_id_[id].object = object; }

  [[nodiscard]] Key key_of(std::uint32_t slot) const {
    const std::uint32_t id = id_of(slot);
    return {id, by_id_[id].generation};
  }

  // The object that `key` names, or nullptr: one bounds check, one load of the entry, one compare.
  [[nodiscard]] T* find(Key key) const {
    if (key.id >= by_id_.size()) return nullptr;
    const Entry& entry = by_id_[key.id];
    return entry.generation == key.generation ? entry.object : nullptr;
  }

  // The object of slot `from` moves to slot `to`: the two slots trade ids. Its entry keeps its
  // address until set_object() gives the new one.
  void moved(std::uint32_t from, std::uint32_t to) {
    std::swap(id_of_slot_[from], id_of_slot_[to]);
    by_id_[id_of_slot_[from]].slot = from;
    by_id_[id_of_slot_[to]].slot = to;
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

  // Differs from run to run: the clocks' ticks and where the loader put this static. Not random
  // enough for security, enough that a run's handles are not another run's. (std::random_device
  // may throw, or abort without exceptions.)
  static std::uint32_t process_salt() {
    static const std::uint32_t salt = [] {
      const auto ticks =
          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                                     std::chrono::system_clock::now().time_since_epoch().count());
      const auto address =
          static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&tables_made_));
      return mix(fold(ticks)) ^ fold(address);
    }();
    return salt;
  }
  static constexpr std::uint32_t fold(std::uint64_t x) {
    return static_cast<std::uint32_t>(x) ^ static_cast<std::uint32_t>(x >> 32);
  }

  struct Entry {
    std::uint32_t generation;
    std::uint32_t slot;
    T* object;  // nullptr but while the object lives
  };

  // Entries and ids of slots beyond size_ are of slots that a shrink took away: they keep their
  // ids and generations for when the slots come back, so that a handle of an object that lived
  // there stays stale.
  std::vector<Entry> by_id_;
  std::vector<std::uint32_t> id_of_slot_;
  std::uint32_t size_ = 0;
  std::uint32_t seed_;
};

}  // namespace poolalloc::detail
