// The ids and generations behind Pool<T>'s handles. A handle names an id, not a slot, so that
// compaction can move an object without invalidating its handles: each slot holds one id (a
// permutation of 0 .. slots-1, the identity until compaction moves something), and the id's
// generation changes at every spawn of it.
//
// Both live in the slot, beside its object: an 8-byte stamp, the key {id, generation} of the id
// that the slot holds, laid out as a HandleKey is (the id in the low half, the generation in the
// high one), with a bit that says its object is not alive (free, being built or being moved). A
// live object's stamp is so exactly its handle's 8 bytes, and resolving a
// handle whose id sits in the slot of its number (every id of a pool that never compacted) is
// what a classic slot map does: one index, one compare, in the line of the object itself. Only
// an id that compaction moved away from its number is found through the table of slots by id,
// which nothing but compaction, growth and shrink() writes; spawn and despawn write the stamp
// alone.
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
#include <vector>

namespace poolalloc::detail {

// What a handle holds: an id and a generation. Default: no id.
struct HandleKey {
  std::uint32_t id = UINT32_MAX;
  std::uint32_t generation = 0;
};

class HandleTable {
 public:
  using Key = HandleKey;
  // generation << 32 | id, with kNotLive set but while the slot's object lives.
  using Stamp = std::uint64_t;

  // Ids are below 2^31: the top bit of a stamp's id half is kNotLive.
  static constexpr std::uint32_t kMaxIds = std::uint32_t{1} << 31;
  static constexpr Stamp kNotLive = kMaxIds;

  HandleTable()
      : seed_(mix(process_salt() + tables_made_.fetch_add(1, std::memory_order_relaxed))) {}

  // The stamp of a live object under `key`: its handle's packed bits.
  [[nodiscard]] static constexpr Stamp live(Key key) {
    return Stamp{key.generation} << 32 | key.id;
  }
  [[nodiscard]] static constexpr Stamp not_live(Key key) { return live(key) | kNotLive; }
  [[nodiscard]] static constexpr bool is_live(Stamp stamp) { return (stamp & kNotLive) == 0; }
  [[nodiscard]] static constexpr Key key_of(Stamp stamp) {
    return {static_cast<std::uint32_t>(stamp) & (kMaxIds - 1),
            static_cast<std::uint32_t>(stamp >> 32)};
  }
  // The stamp of a new object in a free slot of stamp `stamp`: the id's next generation (which
  // wraps to 0 out of the top), not live until its constructor returns.
  [[nodiscard]] static constexpr Stamp next_generation(Stamp stamp) {
    return (stamp + (Stamp{1} << 32)) | kNotLive;
  }

  // Takes the memory that ids up to `count` need; throws std::bad_alloc (and changes nothing else)
  // when it cannot be had. Exactly the room needed (4 bytes an id), which stays untouched until
  // the ids join: push_back alone would double it.
  void reserve(std::size_t count) {
    if (count > slot_of_id_.capacity()) slot_of_id_.reserve(count);
  }

  // The stamp of slot `slot`, the first never used (ids() of them before it), as it is first
  // handed out: a new id of the slot's number, free. Allocates only what reserve() did not.
  Stamp joining(std::uint32_t slot) {
    slot_of_id_.push_back(slot);
    return not_live({slot, seed_});
  }

  // Takes the memory that parking `count` stamps needs; throws std::bad_alloc (changing nothing)
  // when it cannot be had.
  void reserve_parking(std::uint32_t count) { parked_.reserve(parked_.size() + count); }
  // Slot `slot`, free, the last of the pool's that had a stamp, leaves with its stamp: its id and
  // generation stay, for when the slot comes back, so that a handle of an object that lived there
  // stays stale. Allocates only what reserve_parking() did not.
  void park(Stamp stamp) { parked_.push_back(stamp); }
  [[nodiscard]] bool has_parked() const { return !parked_.empty(); }
  // The stamp of the lowest slot parked, as it comes back.
  Stamp unpark() {
    const Stamp stamp = parked_.back();
    parked_.pop_back();
    return stamp;
  }

  // How many ids have ever been (the most slots the pool has handed out at once, counting each
  // slot from its first use): every id below is some slot's.
  [[nodiscard]] std::uint32_t ids() const { return static_cast<std::uint32_t>(slot_of_id_.size()); }

  // The slot that holds `id` (maybe one that a shrink took away), for an id below ids().
  [[nodiscard]] std::uint32_t slot_of(std::uint32_t id) const { return slot_of_id_[id]; }

  // `id` is now in slot `slot` (compaction traded it).
  void place(std::uint32_t id, std::uint32_t slot) { slot_of_id_[id] = slot; }

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

  // The slot of each id: the identity until compaction trades ids, read only for an id that is
  // not in the slot of its number.
  std::vector<std::uint32_t> slot_of_id_;
  // The stamps of the slots that shrink() took away, the lowest last: slots [capacity, ids()).
  std::vector<Stamp> parked_;
  std::uint32_t seed_;
};

}  // namespace poolalloc::detail
