// Pool<T>: objects of one type in slots of equal size, found with a bitmap.
//
// - spawn() constructs in the lowest free slot (detail/slot_bitmap.hpp), so live objects stay
//   packed in address order however they die, and a walk with for_each() or the iterators is a
//   walk over contiguous memory. spawn and despawn cost a few instructions each and read no freed
//   slot.
// - Handle<T>: an id plus a generation (detail/handle_table.hpp), kept in a stamp beside the
//   object in its slot, so that get() reads one line or two, as a slot map does. get() returns
//   nullptr once the object is gone, even when its slot holds another one (for 2^32 spawns into
//   the slot, where the 32-bit generation wraps), and after compact() still finds it.
// - compact() moves live objects down into the free slots below them.
// - clear(), and destroying the pool, destroy the objects still alive, whose destructors may
//   despawn and spawn; with debug checks the destruction first lists them (set_leak_report).
// - An object is alive from when its constructor returns: walks and clear() from the constructor
//   leave the object being built alone, and compact() from it does nothing. compact()'s move
//   constructor is such a constructor, but clear() from it is reported and aborts.
// - shrink() gives back empty trailing chunks; a move takes the objects along without moving them.
// - Always on: despawn of a pointer not live in this pool, or of a stale handle, is reported and
//   aborts before any destructor runs. Debug checks (POOLALLOC_DEBUG, or DebugChecks::on) add
//   fill patterns, and check on spawn that no despawned slot was written to.
//
// A fixed pool is one chunk of slots; a growable one, when full (or on reserve()), adds a chunk
// that takes its capacity to at least twice what it was, and at least 64 slots more, rounded up
// to a power of two, and never moves an object to grow; a slot's address is found in O(1) however
// many chunks (detail/slot_chunks.hpp). A Growth::growable pool lays its chunks end to end in
// address space it reserves (detail/address_range.hpp), so that its slots stay one array, as a
// fixed pool's are. Creating or growing a pool touches none of its slots: a
// slot gets its stamp when it is first used. Not thread-safe, by choice: use one pool per thread
// (or Synchronized<Pool<T>>).
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/address_range.hpp"
#include "detail/cold.hpp"
#include "detail/construct.hpp"
#include "detail/debug_blocks.hpp"
#include "detail/exceptions.hpp"
#include "detail/handle_table.hpp"
#include "detail/message.hpp"
#include "detail/name.hpp"
#include "detail/printing.hpp"
#include "detail/slot_bitmap.hpp"
#include "detail/slot_chunks.hpp"
#include "fixed_pool.hpp"

namespace poolalloc {

template <class T>
class Pool;

// Refers to an object of a Pool<T> without keeping it alive. Default-constructed: refers to none.
template <class T>
class Handle {
 public:
  Handle() = default;
  [[nodiscard]] std::uint32_t id() const { return key_.id; }
  [[nodiscard]] std::uint32_t generation() const { return key_.generation; }
  friend bool operator==(Handle a, Handle b) { return a.packed() == b.packed(); }
  // Ordered and hashable, so that handles can key std::map, std::set and std::unordered_map:
  // by id, then generation (an order of no other meaning).
  friend auto operator<=>(Handle a, Handle b) { return a.packed() <=> b.packed(); }
  [[nodiscard]] std::uint64_t packed() const {
    return std::uint64_t{key_.id} << 32 | key_.generation;
  }
  // The handle whose packed() gave `bits`, for saved games, the network and hot reload. Any bits
  // make a handle: one that no live object of the pool has refers to none (but by the chance a
  // handle of another pool has).
  [[nodiscard]] static Handle from_packed(std::uint64_t bits) {
    return Handle({static_cast<std::uint32_t>(bits >> 32), static_cast<std::uint32_t>(bits)});
  }

 private:
  friend class Pool<T>;
  explicit Handle(detail::HandleKey key) : key_(key) {}
  detail::HandleKey key_;
};

template <class T>
class Pool {
  static_assert(!std::is_array_v<T>, "Pool<T>: T is an array type; wrap the array in a struct");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,
                "Pool<T>: T is const or volatile; pool the unqualified type");
  template <class V>
  class BasicIterator;

 public:
  // Forward iterators over the live objects, in for_each's order and with its rules: the loop may
  // despawn the object it stands at, or others (one despawned before the walk reaches it is not
  // visited), and what it spawns may or may not be visited. compact(), shrink() and a move of the
  // pool invalidate them.
  using iterator = BasicIterator<T>;
  using const_iterator = BasicIterator<const T>;

  struct Despawner {
    Pool* pool;
    void operator()(T* object) const { pool->despawn(object); }
  };
  using UniquePtr = std::unique_ptr<T, Despawner>;

  // An empty growable pool, as a member or a container's element: it holds no memory until its
  // first spawn (or reserve()), which gives it 64 slots.
  Pool() : Pool(0, Growth::growable) {}

  // Check capacity() for failure: 0 when the memory could not be had.
  explicit Pool(std::size_t capacity, Growth growth = Growth::fixed,
                DebugChecks debug = kDefaultDebugChecks)
      : growth_(growth), debug_(debug == DebugChecks::on) {
    grow_to(capacity);
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A move takes the objects, their handles and the memory along: pointers and handles stay
  // valid (but a UniquePtr of make_unique names its pool by address). The pool moved from is
  // left empty, with capacity 0 and its growth and debug checks, and usable: a growable one grows
  // again. Move assignment first destroys what the pool held, in place, as its destruction would
  // (destructors that use the pool see this one), then takes the other's. A pool is not moved
  // while its objects' destructors or a walk over it run (from one of them): that is reported and
  // aborts, since the walk or the despawn would go on in the pool moved from.
  Pool(Pool&& other) noexcept
      : Pool(0, other.growth_, other.debug_ ? DebugChecks::on : DebugChecks::off) {
    other.check_not_busy("move");
    swap(other);
  }
  Pool& operator=(Pool&& other) noexcept {
    if (this == &other) return *this;
    check_not_busy("move assignment");
    other.check_not_busy("move");
    destroy_objects();
    Pool taken(std::move(other));
    swap(taken);
    return *this;  // `taken` frees the memory this pool held
  }

  // Destroys the live objects as clear() does, then frees the pool's memory.
  ~Pool() {
    destroy_objects();
    for (const Chunk& chunk : chunks_.chunks()) {
      if (!range_.holds(chunk.slots))
        ::operator delete (chunk.slots, std::align_val_t{alignof(Slot)});
    }
  }

  // nullptr when the pool is full and cannot grow. If T's constructor throws, the slot goes back
  // (a chunk grown for it stays) and the exception propagates.
  //
  // The fast path, a slot below fast_spawn_slots_ (one that has its stamp, without debug checks):
  // the lowest free slot from the bitmap, one compare (which a full pool's kNone fails too), the
  // slot's address, its stamp, the constructor and the counts. In the anchors' churn of 10,000
  // objects of 64 B, a spawn and despawn pair measures 83 instructions under callgrind, the
  // loop's own and the object's constructor's included (g++ 12, Release; 104 before these fast
  // paths): tests/toolkit/pair_instructions.sh holds it.
  template <class... Args>
  [[nodiscard]] T* spawn(Args&&... args) {
    std::uint32_t slot = free_.take_lowest_free();
    Slot* place = nullptr;
    if (slot < fast_spawn_slots_) [[likely]] {
      place = &slot_at(slot);
    } else {
      const TakenSlot taken = take_slot_slowly(slot);
      if (taken.place == nullptr) return nullptr;
      slot = taken.slot;
      place = taken.place;
    }
    // The generation moves first, so that handle_of(this) in the constructor gives the handle
    // that spawn's object has; a constructor that throws leaves it moved, so that such a handle
    // never resolves. The handle resolves once the constructor has returned.
    const Stamp stamp = Handles::next_generation(place->stamp);
    place->stamp = stamp;
    T* object = build_in(slot, *place, std::forward<Args>(args)...);
    place->stamp = stamp & ~Handles::kNotLive;
    note_spawned();
    return object;
  }

  // Spawns an object that `handle` refers to, for loading what another pool (another run of the
  // program, a saved game, a server) gave out: the object goes into the slot of the handle's id
  // and the id takes the handle's generation, so that the saved handle, and every copy of it,
  // resolves here. nullptr when the id is taken (its object lives, or is being built), for a
  // default handle, and when the id lies beyond a fixed pool's slots or a growable one cannot grow
  // to it; a growable pool grows to hold the id (call reserve() first for a whole level; for
  // untrusted data use a fixed pool, or check ids first). Meant for a new pool: a cleared one may
  // give an id back a generation it handed out before, so that its old handles resolve again.
  // O(1) but for the growth and, the first time the pool reaches the id, the stamps of the slots
  // below it that were never used (8 bytes each, once); if T's constructor throws, as spawn().
  template <class... Args>
  [[nodiscard]] T* spawn_at(Handle<T> handle, Args&&... args) {
    const detail::HandleKey key = handle.key_;
    if (key.id >= Handles::kMaxIds) return nullptr;  // the default handle's id too
    const std::uint32_t slot = key.id < handles_.ids() ? handles_.slot_of(key.id) : key.id;
    if (slot >= capacity()) {
      if (growth_ == Growth::fixed || !grow_to(std::max(std::size_t{slot} + 1, growth()))) {
        return nullptr;
      }
    }
    if (!free_.is_free(slot)) return nullptr;
    if (debug_) [[unlikely]]
      check_untouched_since_despawn(slot, "spawn_at");
    free_.take(slot);
    if (slot >= stamped_) stamp_new_slots(slot + 1);
    Slot& place = slot_at(slot);
    place.stamp = Handles::not_live(key);
    T* object = build_in(slot, place, std::forward<Args>(args)...);
    place.stamp = Handles::live(key);
    note_spawned();
    return object;
  }

  // nullptr is ignored; a pointer to no live object of this pool is reported before any
  // destructor runs.
  //
  // The fast path, a live object at the start of a slot below fast_despawn_slots_ (a slot of the
  // first chunk that has its stamp, without debug checks): one multiply and one compare find the
  // slot and check the pointer (detail/slot_chunks.hpp), the bitmap says the slot is used, then the
  // destructor, the stamp's store and the bitmap's bit.
  //
  // A used slot holds a live object unless a constructor runs (spawn's, or compact()'s move into
  // it): only while building_ is set does a used slot hold an object being built. Checking the
  // bitmap and building_, both in L1, rather than the stamp, which lies in the object's line,
  // keeps the branch from waiting on that line: in the anchors' churn, whose despawns read the
  // objects in a random order, that made a despawn 20 % faster (2.16 ns -> 1.75), one load more.
  void despawn(T* object) {
    const std::uintptr_t slot = chunks_.first_chunk_slot_of(object);
    if (slot < fast_despawn_slots_) [[likely]] {
      // The object starts its slot: the slot is at its address.
      Slot& place = *std::launder(reinterpret_cast<Slot*>(object));
      if (!free_.is_free(static_cast<std::uint32_t>(slot)) && building_ == nullptr) [[likely]] {
        if (!is_dying(static_cast<std::uint32_t>(slot))) {
          destroy_slot(static_cast<std::uint32_t>(slot), place, DebugChecks::off);
        }
        return;
      }
    }
    despawn_slowly(object);
  }

  // A default handle is ignored, like nullptr; a stale handle, or one of another pool, is reported
  // and aborts.
  void despawn(Handle<T> handle) {
    if (handle == Handle<T>()) return;
    const std::uint32_t slot = live_slot_of_key(handle.key_);
    if (slot == detail::SlotBitmap::kNone) [[unlikely]] {
      if (destroying_) return;  // as despawn(T*)
      fail_handle("despawn", handle);
    }
    if (is_dying(slot)) [[unlikely]]
      return;
    destroy_slot(slot, slot_at(slot));
  }

  // Destroys every live object, in slot order, each once. A destructor may despawn other objects
  // of the pool, by pointer or by handle (one destroyed already is ignored), and may spawn: what
  // it spawns is destroyed too before clear() returns, so the pool is empty then (and a
  // destructor that always spawns never lets it return). A destructor may call clear(): the
  // objects whose destructors are running are left to die when those return. So may a
  // constructor: the object it builds is not one yet, and is left to be built. From the move
  // constructor or the moved-from destructor that compact() runs, it is reported and aborts: it
  // would destroy the object in transit, half built in one slot and moved from in the other.
  void clear() {
    if (moving_) [[unlikely]]
      fail_during_compact("clear()");
    const bool outer = std::exchange(destroying_, true);
    while (size_ > dying_count()) {
      // walk_objects() but for the address of each slot, which the destructions write to
      // (Place::address_for_stores).
      typename Chunks::Place place{};
      walk(
          [&](std::uint32_t slot) {
            if (!is_dying(slot)) destroy_slot(slot, *place.address_for_stores(slot));
          },
          [&](std::uint32_t word) { place = chunks_.place_of_word(word); });
    }
    destroying_ = outer;
  }

  // Empty when the pool is full.
  template <class... Args>
  [[nodiscard]] UniquePtr make_unique(Args&&... args) {
    return UniquePtr(spawn(std::forward<Args>(args)...), Despawner{this});
  }

  // The handle of a live object of this pool; a default handle for nullptr. Anything else is
  // reported and aborts.
  [[nodiscard]] Handle<T> handle_of(const T* object) const {
    if (object == nullptr) return {};
    return Handle<T>(Handles::key_of(slot_at(live_slot_of(object, "handle_of")).stamp));
  }

  // The object `handle` refers to; nullptr once it was despawned (from when its destructor has
  // returned), before its constructor has returned, for a default handle, and for a handle of
  // another pool. O(1): one index and one compare with the stamp beside the object, as a slot
  // map (in a grown pool, a shift and a load from the table of each 64-slot word's chunk base
  // more, without a branch); for an object that compact() moved, a call and a load more (its slot
  // by id).
  [[nodiscard]] T* get(Handle<T> handle) { return find(handle.key_); }
  [[nodiscard]] const T* get(Handle<T> handle) const { return find(handle.key_); }

  // Calls f(object) for every live object, in slot order (address order within each chunk, and
  // so for a fixed pool). f may despawn the object it is given or others (one despawned before the
  // walk reaches it is not visited); an object spawned during the walk may or may not be visited.
  // An object whose constructor is running (the walk is called from it) is not visited. shrink()
  // does nothing during the walk. O(capacity / 64 + live objects).
  template <class F>
  void for_each(F&& f) {
    walk_objects([&](std::uint32_t, Slot& slot) { f(*object_in(slot)); });
  }
  template <class F>
  void for_each(F&& f) const {
    walk_objects([&](std::uint32_t, Slot& slot) { f(std::as_const(*object_in(slot))); });
  }

  // for_each, giving f(handle, object) each object with its handle (as EnTT's view.each()): the
  // handle is read from the slot's stamp, without the search for the object's chunk and the check
  // that handle_of(object) makes. Under for_each's rules: f may despawn the object it is given or
  // others, what it spawns may or may not be visited, shrink() does nothing meanwhile.
  template <class F>
  void each(F&& f) {
    walk_objects([&](std::uint32_t, Slot& slot) {
      f(Handle<T>(Handles::key_of(slot.stamp)), *object_in(slot));
    });
  }
  template <class F>
  void each(F&& f) const {
    walk_objects([&](std::uint32_t, Slot& slot) {
      f(Handle<T>(Handles::key_of(slot.stamp)), std::as_const(*object_in(slot)));
    });
  }

  [[nodiscard]] iterator begin() { return iterator(this, first_walk()); }
  [[nodiscard]] iterator end() { return iterator(); }
  [[nodiscard]] const_iterator begin() const { return const_iterator(this, first_walk()); }
  [[nodiscard]] const_iterator end() const { return const_iterator(); }
  [[nodiscard]] const_iterator cbegin() const { return begin(); }
  [[nodiscard]] const_iterator cend() const { return end(); }

  // Moves the highest live objects into the lowest free slots (move-construct, then destroy the
  // source) until the live objects fill the slots [0, size()). Handles stay valid; pointers to
  // moved objects do not: moved(from, to) is called for each, where `from` is already destroyed
  // and may not be dereferenced. The target slot is taken and the handle moved before the move
  // constructor runs, so that handle_of(this) there gives the object's handle and a spawn from
  // the source's destructor takes another slot; a move constructor that throws leaves the object
  // where it was. Returns how many moved. While an object's constructor or destructor, for_each,
  // clear() or compact() runs (called from one of them), it does nothing and returns 0: it would
  // move the object being built or the dying one, or objects the walk has passed. compact() counts
  // as a walk: shrink() from `moved` or from the objects' constructors and destructors does
  // nothing (it would give back slots that the compaction goes on to move objects out of).
  template <class Moved>
  std::size_t compact(Moved&& moved) requires std::is_move_constructible_v<T> {
    if (busy()) return 0;
    const Walking walking(walks_);
    std::size_t count = 0;
    std::uint32_t from = free_.size();
    for (std::uint32_t to = free_.lowest_free(); to != detail::SlotBitmap::kNone;
         to = free_.lowest_free()) {
      from = free_.highest_used_below(from);
      if (from == detail::SlotBitmap::kNone || from < to) break;
      if (debug_) [[unlikely]]
        check_untouched_since_despawn(to, "compact");
      free_.take(to);
      trade_ids(from, to);
      T* source = object_at(from);
      T* target = nullptr;
      {
        const Restore<bool> moving(moving_, true);
        target = construct_moved(from, to, *source);
        destroy_moved_from(from, to);
      }
      free_.release(from);
      if (debug_) fill_freed(from);
      moved(source, target);
      ++count;
    }
    return count;
  }
  std::size_t compact() requires std::is_move_constructible_v<T> {
    return compact([](T*, T*) {});
  }

  // As FixedPool's: gives back the trailing chunks, all but the first, that hold no live object,
  // and returns the bytes of their slots, slot_bytes() each (the bitmap and the table of slots by
  // id keep their room, for when the pool grows again). Handles of objects that lived there stay
  // stale: their slots' ids and generations are kept aside (8 bytes a slot; a chunk whose room for
  // them cannot be had stays). O(capacity / 64 + slots given back).
  // During for_each, clear() or compact() (from a callback, a constructor or a destructor) it does
  // nothing and returns 0: the walk would go on into the slots given back.
  std::size_t shrink() {
    if (walks_ > 0) return 0;
    const std::uint32_t highest = free_.highest_used_below(free_.size());
    std::size_t released = 0;
    while (chunks_.count() > 1 &&
           (highest == detail::SlotBitmap::kNone || highest < chunks_.chunks().back().first)) {
      const Chunk& last = chunks_.chunks().back();
      // Its slots that were ever used, which hold stamps: the first ones.
      const std::uint32_t stamped = stamped_ > last.first ? stamped_ - last.first : 0;
      if (!detail::returns_without_bad_alloc([&] { handles_.reserve_parking(stamped); })) break;
      for (std::uint32_t slot = stamped; slot-- > 0;) handles_.park(last.slots[slot].stamp);
      const Chunk chunk = chunks_.remove_last();
      stamped_ = std::min(stamped_, chunk.first);
      update_fast_slots();
      released += std::size_t{chunk.count} * sizeof(Slot);
      free_.remove_slots_from(chunk.first);
      give_back(chunk.slots);
    }
    return released;
  }

  // Room for `count` objects without growing on the way (as plf::colony's reserve): a growable
  // pool whose capacity() is below `count` adds one chunk: an empty pool one of `count` slots (at
  // least 64), another one that ends at the least power of two of at least `count` and 64 slots
  // more (see growth()). Returns whether capacity() >= count: false for a fixed pool smaller than
  // that, which never grows, and when the memory cannot be had (the pool as it was).
  bool reserve(std::size_t count) {
    if (count <= capacity()) return true;
    if (growth_ == Growth::fixed) return false;
    return grow_to(std::max<std::size_t>(count, capacity() + Chunks::kLeastChunk));
  }

  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  // What the pool reports of its live objects when it is destroyed with debug checks (see
  // LeakReport; a summary by default).
  void set_leak_report(LeakReport report) { leak_report_ = report; }
  [[nodiscard]] LeakReport leak_report() const { return leak_report_; }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return free_.size(); }
  [[nodiscard]] std::size_t peak() const { return peak_; }
  [[nodiscard]] std::size_t chunk_count() const { return chunks_.count(); }
  [[nodiscard]] bool debug_checks() const { return debug_; }
  // The bytes that a slot takes: the object, then the 8-byte stamp of its handle's id and
  // generation, rounded up to alignof(T) (72 for an object of 64 bytes aligned to 8 or less).
  [[nodiscard]] static constexpr std::size_t slot_bytes() { return sizeof(Slot); }

  // `Pool "particles" (object 64 B): 10 live, 54 free of 64, peak 12, 1 chunk, debug checks off`
  friend std::ostream& operator<<(std::ostream& out, const Pool& pool) {
    return detail::write_line(out, [&pool](std::ostream& line) {
      detail::write_title(line, "Pool", pool.name(), &pool)
          << " (object " << sizeof(T) << " B): " << pool.size() << " live, "
          << pool.capacity() - pool.size() << " free of " << pool.capacity() << ", peak "
          << pool.peak();
      detail::write_chunks_and_checks(line, pool.chunk_count(), pool.debug_checks());
    });
  }

 private:
  using Handles = detail::HandleTable;
  using Stamp = Handles::Stamp;

  // A slot: room for one T, then the stamp of the id that the slot holds (detail/handle_table.hpp),
  // so that get() finds the generation in the object's own line or the next.
  struct Slot {
    alignas(T) std::byte object[sizeof(T)];
    Stamp stamp;
  };
  using Chunks = detail::SlotChunks<Slot>;
  using Chunk = typename Chunks::Chunk;

  // The capacity that a full growable pool grows to: twice its own, and at least 64 slots (the
  // first chunk of one created with none), rounded up to a power of two by the chunk past the
  // first (detail/slot_chunks.hpp: so that every chunk after the second begins and ends at a
  // multiple of 64 slots).
  [[nodiscard]] std::size_t growth() const {
    return std::max<std::size_t>(2 * capacity(), Chunks::kLeastChunk);
  }

  // A chain of slots through stack frames, innermost first (dying_, building_).
  struct Slots {
    std::uint32_t slot;
    const Slots* outer;
  };

  // V is T or const T. An end iterator stands at slot kNone, whatever its pool.
  template <class V>
  class BasicIterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<V>;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;

    BasicIterator() = default;
    // iterator -> const_iterator
    operator BasicIterator<const T>() const requires(!std::is_const_v<V>) {
      return BasicIterator<const T>(pool_, walk_);
    }

    reference operator*() const { return *pool_->object_at(walk_.slot); }
    pointer operator->() const { return pool_->object_at(walk_.slot); }
    BasicIterator& operator++() {
      pool_->free_.step(walk_);
      pool_->skip_building(walk_);
      return *this;
    }
    BasicIterator operator++(int) {
      BasicIterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const BasicIterator& a, const BasicIterator& b) {
      return a.walk_.slot == b.walk_.slot;
    }

   private:
    friend class Pool;
    template <class>
    friend class BasicIterator;
    BasicIterator(const Pool* pool, detail::SlotBitmap::Walk walk) : pool_(pool), walk_(walk) {}

    const Pool* pool_ = nullptr;
    detail::SlotBitmap::Walk walk_;
  };

  void swap(Pool& other) noexcept {
    using std::swap;
    swap(chunks_, other.chunks_);
    range_.swap(other.range_);
    swap(free_, other.free_);
    swap(handles_, other.handles_);
    swap(stamped_, other.stamped_);
    swap(fast_spawn_slots_, other.fast_spawn_slots_);
    swap(fast_despawn_slots_, other.fast_despawn_slots_);
    swap(size_, other.size_);
    swap(peak_, other.peak_);
    swap(growth_, other.growth_);
    swap(debug_, other.debug_);
    swap(destroying_, other.destroying_);
    swap(walks_, other.walks_);
    swap(dying_, other.dying_);
    swap(building_, other.building_);
    swap(moving_, other.moving_);
    swap(leak_report_, other.leak_report_);
    swap(name_, other.name_);
  }

  // Adds the chunk that takes the capacity to chunks_.capacity_for(wanted). Its slots get no
  // stamp (the pages stay untouched) but those that shrink() took away with their stamps, which
  // get them back. All or nothing: false, and the pool as it was, when any of the memory cannot be
  // had.
  bool grow_to(std::size_t wanted) {
    if (wanted <= capacity() || wanted > Handles::kMaxIds) return false;
    const std::size_t target = chunks_.capacity_for(wanted);
    const std::size_t count = target - capacity();
    if (target > Handles::kMaxIds || count > SIZE_MAX / sizeof(Slot)) return false;
    Slot* chunk = new_slots(count);
    if (chunk == nullptr) return false;
    const auto slots = static_cast<std::uint32_t>(count);
    const std::uint32_t first = free_.size();
    const bool reserved = detail::returns_without_bad_alloc([&] {
      chunks_.reserve(chunk, slots);
      free_.reserve(slots);
      handles_.reserve(target);
    });
    if (!reserved) {
      give_back(chunk);
      return false;
    }
    std::uint32_t back = 0;  // slots given back their stamps: used ones, as below stamped_
    for (; back < slots && handles_.has_parked(); ++back) {
      ::new (chunk + back) Slot;
      chunk[back].stamp = handles_.unpark();
      if (debug_) fill_object(chunk[back]);
    }
    chunks_.add(chunk, slots);
    free_.add_free_slots(slots);
    if (back > 0) stamped_ = first + back;  // with parked stamps, stamped_ was first
    update_fast_slots();
    return true;
  }

  // Memory for `count` slots after the last, untouched: in the range that a Growth::growable pool
  // reserves at its first growth, where the first chunk fits one, while they fit there and every
  // slot before them lies there (so that its slots stay one run and a grown pool's get() is a
  // full-size one's), else from operator new. Where the system refuses the range's pages, the
  // chunk comes from operator new, and so do the chunks after it until shrink() gives it back; a
  // first chunk so refused leaves the range of no use to the pool, which gives it back. nullptr
  // when the memory cannot be had.
  Slot* new_slots(std::size_t count) {
    const std::size_t begin = std::size_t{capacity()} * sizeof(Slot);
    const std::size_t bytes = count * sizeof(Slot);
    constexpr std::size_t kRange = detail::AddressRange::kBytes;
    constexpr bool kRangeAligned = alignof(Slot) <= 4096;  // a range starts at a page
    if (growth_ == Growth::growable && kRangeAligned && begin <= kRange &&
        bytes <= kRange - begin && all_slots_in_range()) {
      const bool first_chunk = chunks_.count() == 0;
      if (first_chunk) range_ = detail::AddressRange::reserve();
      if (range_.commit_to(begin + bytes)) return reinterpret_cast<Slot*>(range_.start() + begin);
      if (first_chunk) range_ = detail::AddressRange();
    }
    return static_cast<Slot*>(
        ::operator new (count * sizeof(Slot), std::align_val_t{alignof(Slot)}, std::nothrow));
  }

  // Whether every slot lies in the range, where the next chunk would follow them (a pool of none
  // has all its slots there).
  [[nodiscard]] bool all_slots_in_range() const {
    return chunks_.count() == 0 || (chunks_.one_run() && range_.holds(chunks_.first().slots));
  }

  // Gives back the memory of the chunk at `slots`, the last: to the system where it lies in the
  // range (its whole pages), else to operator delete.
  void give_back(Slot* slots) {
    if (range_.holds(slots)) {
      range_.decommit_from(
          static_cast<std::size_t>(reinterpret_cast<std::byte*>(slots) - range_.start()));
    } else {
      ::operator delete (slots, std::align_val_t{alignof(Slot)});
    }
  }

  // Gives the slots [stamped_, end), never used, their stamps: new ids of their numbers.
  void stamp_new_slots(std::uint32_t end) {
    for (std::uint32_t slot = stamped_; slot < end; ++slot) {
      Slot& place = *::new (&slot_at(slot)) Slot;
      place.stamp = handles_.joining(slot);
      if (debug_) fill_object(place);
    }
    stamped_ = end;
    update_fast_slots();
  }

  // O(1), however many chunks.
  [[nodiscard]] Slot& slot_at(std::uint32_t slot) const { return *chunks_.address_of(slot); }
  [[nodiscard]] T* object_at(std::uint32_t slot) const { return object_in(slot_at(slot)); }
  [[nodiscard]] static T* object_in(Slot& slot) {
    return std::launder(reinterpret_cast<T*>(slot.object));
  }

  // The live object of `key`: the slot of the id's number while the id sits there (the stamp is
  // the key with no bit of the not-live one), else the slot that compaction moved the id to. In a
  // pool whose slots are one run (every fixed pool, and a growable one grown in its range) the
  // slot's address is the run's base plus the id's offset; in one grown in chunks apart, the base
  // of its 64-slot word's chunk from a table, without a branch (and with a mask where the first
  // chunk ends inside a word), so that ids spread across the first chunk and the others take no
  // mispredicted branch. The tests of the chunks do not depend on the handle: in a loop of gets,
  // g++ 12 -O3 makes one loop of it for each case (13, 17 and 22 instructions a get and read in the
  // anchors' loop: one run, chunks apart, chunks apart whose first ends inside a word; a classic
  // slot map takes 13; 13 and 23 before the table was by word and the miss out of line). All is
  // derived from the handle's 8 bytes, so that the compiler keeps what it can in registers across
  // the loop and loads each handle once.
  [[nodiscard]] T* find(detail::HandleKey key) const {
    const Stamp wanted = Handles::live(key);
    const auto id = static_cast<std::uint32_t>(wanted);
    if (id < stamped_) [[likely]] {
      const std::uintptr_t address = chunks_.one_run()
                                         ? reinterpret_cast<std::uintptr_t>(chunks_.first().slots) +
                                               std::uintptr_t{id} * sizeof(Slot)
                                         : chunks_.address_past(id);
      Slot& slot = *reinterpret_cast<Slot*>(address);
      if (slot.stamp == wanted) [[likely]]
        return object_in(slot);
    }
    return find_moved(wanted);
  }

  // find() of a key whose id is not live in the slot of its number: compaction moved it, or it
  // refers to nothing. Out of line, so that a loop of gets stays small enough for g++ 12 to make
  // one loop of it for each way of finding a slot (inlined, it made one loop that tested the
  // chunks at each get), and pure, so that the pool's fields that those tests read stay in
  // registers across the call.
  [[POOLALLOC_NOINLINE, POOLALLOC_PURE]] T* find_moved(Stamp wanted) const {
    const std::uint32_t moved = moved_slot_of(wanted);
    return moved == detail::SlotBitmap::kNone ? nullptr : object_at(moved);
  }

  // The slot of the live object of `key`, or kNone.
  [[nodiscard]] std::uint32_t live_slot_of_key(detail::HandleKey key) const {
    const Stamp wanted = Handles::live(key);
    if (key.id < stamped_ && slot_at(key.id).stamp == wanted) return key.id;
    return moved_slot_of(wanted);
  }

  // The slot of the live object whose stamp is `wanted` (a handle's key, as live() makes it) when
  // compaction moved its id out of the slot of its number, else kNone.
  [[nodiscard]] std::uint32_t moved_slot_of(Stamp wanted) const {
    const auto id = static_cast<std::uint32_t>(wanted);
    if (id >= handles_.ids()) return detail::SlotBitmap::kNone;
    const std::uint32_t slot = handles_.slot_of(id);
    if (slot == id || slot >= stamped_ || slot_at(slot).stamp != wanted) {
      return detail::SlotBitmap::kNone;
    }
    return slot;
  }

  // Slots `a` and `b` trade their ids, stamps and all: compaction moves an object between them.
  void trade_ids(std::uint32_t a, std::uint32_t b) {
    Slot& first = slot_at(a);
    Slot& second = slot_at(b);
    std::swap(first.stamp, second.stamp);
    handles_.place(Handles::key_of(first.stamp).id, a);
    handles_.place(Handles::key_of(second.stamp).id, b);
  }

  // Constructs spawn's T in slot `slot` (at `place`), which the caller has taken; the slot counts
  // as being built meanwhile, so that walks, clear() and compact() from the constructor leave it
  // alone.
  template <class... Args>
  T* build_in(std::uint32_t slot, Slot& place, Args&&... args) {
    const Slots building{slot, building_};
    const Restore<const Slots*> restore(building_, &building);
    return construct_in(slot, place, std::forward<Args>(args)...);
  }

  // Sets `variable` to `value` for its lifetime, then back to what it was (as a constructor
  // returns or throws).
  template <class V>
  class Restore {
   public:
    Restore(V& variable, V value) : variable_(variable), outer_(std::exchange(variable, value)) {}
    Restore(const Restore&) = delete;
    Restore& operator=(const Restore&) = delete;
    ~Restore() { variable_ = outer_; }

   private:
    V& variable_;
    V outer_;
  };

  // Constructs a T in slot `slot` (at `place`), which the caller has taken. If the constructor
  // throws, the slot is free again (with its fill pattern under debug checks) and the exception
  // propagates.
  template <class... Args>
  T* construct_in(std::uint32_t slot, Slot& place, Args&&... args) {
    void* memory = place.object;
    if constexpr (std::is_nothrow_constructible_v<T, Args&&...>) {
      return detail::construct<T>(memory, std::forward<Args>(args)...);
    } else {
      return detail::undo_on_throw(
          [&] { return detail::construct<T>(memory, std::forward<Args>(args)...); },
          [&] {
            if (debug_) fill_freed(slot);
            free_.release(slot);
          });
    }
  }

  // The slot `object` points at the start of; reported as a fault of `operation` when it points
  // at none of this pool's.
  [[nodiscard]] std::uint32_t slot_of_object(const T* object, std::string_view operation) const {
    const Chunk* chunk = chunks_.chunk_holding(object);
    if (chunk == nullptr) fail_object(operation, object, " outside the pool");
    return slot_in(*chunk, object, operation);
  }

  // The slot of `chunk` that `object` points at the start of; reported as a fault of `operation`
  // when it points inside one.
  [[nodiscard]] std::uint32_t slot_in(const Chunk& chunk, const T* object,
                                      std::string_view operation) const {
    const std::uintptr_t offset = chunk.offset_of(object);
    if (offset % sizeof(Slot) != 0) fail_object(operation, object, " not at the start of a slot");
    return chunk.first + static_cast<std::uint32_t>(offset / sizeof(Slot));
  }

  // compact()'s move of `source` from slot `from` into slot `to`, which it has taken and moved
  // the handle to; if the move constructor throws, the handle goes back and `to` is free again.
  // Both slots count as being built meanwhile, so that walks from the move constructor leave the
  // object in transit alone, and its handle resolves to nothing until the move has returned.
  T* construct_moved(std::uint32_t from, std::uint32_t to, T& source) {
    const Slots target{to, building_};
    const Slots both{from, &target};
    const Restore<const Slots*> restore(building_, &both);
    Slot& place = slot_at(to);
    place.stamp |= Handles::kNotLive;
    T* moved = nullptr;
    if constexpr (std::is_nothrow_move_constructible_v<T>) {
      moved = construct_in(to, place, std::move(source));
    } else {
      moved = detail::undo_on_throw([&] { return construct_in(to, place, std::move(source)); },
                                    [&] {
                                      place.stamp &= ~Handles::kNotLive;
                                      trade_ids(to, from);
                                    });
    }
    place.stamp &= ~Handles::kNotLive;
    return moved;
  }

  // The slot of `object` if it is a live object of this pool; reported as a fault of `operation`
  // otherwise.
  [[nodiscard]] std::uint32_t live_slot_of(const T* object, std::string_view operation) const {
    const std::uint32_t slot = slot_of_object(object, operation);
    if (free_.is_free(slot)) fail_object(operation, object, ", which is not alive");
    return slot;
  }

  // despawn() but for its fast path: nullptr, a chunk past the first, a slot of the first at or
  // above fast_despawn_slots_ (every slot under debug checks), every despawn while a constructor
  // runs, and every object that is not alive (which is ignored during its own destructor and
  // clear(), and otherwise reported). Out of line, so that despawn()'s fast path inlines into its
  // callers' loops.
  [[POOLALLOC_NOINLINE]] void despawn_slowly(T* object) {
    const Chunk* chunk = chunks_.chunk_holding(object);
    if (chunk == nullptr) [[unlikely]] {
      if (object == nullptr) return;
      fail_object("despawn", object, " outside the pool");
    }
    const std::uint32_t slot = slot_in(*chunk, object, "despawn");
    // The object starts its slot (slot_in checked it): the slot is at its address.
    Slot& place = *std::launder(reinterpret_cast<Slot*>(object));
    // Not the slot's live object: free (maybe never used, without a stamp), being built, or
    // compact()'s source of a move.
    if (slot >= stamped_ || !Handles::is_live(place.stamp)) [[unlikely]] {
      if (is_dying(slot)) return;
      // destroyed by clear() already, before the despawning destructor
      if (destroying_ && free_.is_free(slot)) return;
      fail_object("despawn", object, ", which is not alive");
    }
    if (is_dying(slot)) [[unlikely]]
      return;
    destroy_slot(slot, place);
  }

  // spawn()'s slot and its place when the slot (`slot`, which the bitmap gave) is not one of the
  // first fast_spawn_slots_: kNone, where a growable pool grows and takes the lowest free slot of
  // the chunk grown; a slot with debug checks, which checks that no one wrote to it since its
  // despawn; the first slot never used, which gets its stamp here (the lowest free slot is at most
  // that one). A place of nullptr when the pool is full and cannot grow. (Both returned, not the
  // slot written through a reference, so that spawn()'s fast path keeps the slot in a register.)
  struct TakenSlot {
    std::uint32_t slot;
    Slot* place;
  };
  [[POOLALLOC_NOINLINE]] TakenSlot take_slot_slowly(std::uint32_t slot) {
    if (slot == detail::SlotBitmap::kNone) {
      if (growth_ == Growth::fixed || !grow_to(growth())) return {slot, nullptr};
      slot = free_.take_lowest_free();
    }
    if (debug_) [[unlikely]]
      check_untouched_since_despawn(slot, "spawn");
    if (slot >= stamped_) stamp_new_slots(slot + 1);
    return {slot, &slot_at(slot)};
  }

  // The slots that spawn() and despawn() take on their fast paths: those that have stamps (for
  // despawn, those of the first chunk), and none with debug checks, whose checks the slow paths
  // make. One compare with each so stands for a full pool's kNone (spawn), the first chunk's
  // bounds (despawn), the stamps and debug_.
  void update_fast_slots() {
    fast_spawn_slots_ = debug_ ? 0 : stamped_;
    fast_despawn_slots_ = std::min(fast_spawn_slots_, chunks_.first().count);
  }

  // The slot stays used while its destructor runs, so that nothing the destructor spawns takes
  // it; the destructor's own despawns of the object (directly, or through objects that own each
  // other) find it dying and are ignored. `checks`: off from despawn()'s fast path, which runs only
  // without debug checks, so that it tests no flag for the fill pattern.
  void destroy_slot(std::uint32_t slot, Slot& place, DebugChecks checks = DebugChecks::on) {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      Slots dying{slot, dying_};
      dying_ = &dying;
      object_in(place)->~T();
      dying_ = dying.outer;
    }
    place.stamp |= Handles::kNotLive;
    if (checks == DebugChecks::on && debug_) [[unlikely]]
      fill_freed(slot);
    free_.release(slot);
    --size_;
  }

  // Counts a walk in walks_ while it lives.
  class Walking {
   public:
    explicit Walking(std::uint32_t& walks) : walks_(++walks) {}
    Walking(const Walking&) = delete;
    Walking& operator=(const Walking&) = delete;
    ~Walking() { --walks_; }

   private:
    std::uint32_t& walks_;
  };

  // free_.for_each_used(f, on_word) but for the slots being built, counted in walks_ while it
  // runs. No slot is being built but those that were when the walk started: any constructor that
  // f runs returns before the walk goes on.
  template <class F, class OnWord = void (*)(std::uint32_t)>
  void walk(
      F&& f, OnWord&& on_word = [](std::uint32_t) {}) const {
    const Walking walking(walks_);
    if (building_ == nullptr) [[likely]] {
      free_.for_each_used(f, on_word);
    } else {
      free_.for_each_used(
          [&](std::uint32_t slot) {
            if (!is_building(slot)) f(slot);
          },
          on_word);
    }
  }

  // walk(), calling f(slot number, slot): the addresses of a word's slots are found once a word. A
  // chunk that f adds may change where a word's free slots lie, never its used ones, and the walk
  // visits no slot of a word that was free when it began the word.
  template <class F>
  void walk_objects(F&& f) const {
    typename Chunks::Place place{};
    walk([&](std::uint32_t slot) { f(slot, *place.address_of(slot)); },
         [&](std::uint32_t word) { place = chunks_.place_of_word(word); });
  }

  // The iterators' first stop: the first used slot that is not being built.
  [[nodiscard]] detail::SlotBitmap::Walk first_walk() const {
    detail::SlotBitmap::Walk walk = free_.first_used();
    skip_building(walk);
    return walk;
  }

  // Moves `walk` past the slots being built.
  void skip_building(detail::SlotBitmap::Walk& walk) const {
    if (building_ == nullptr) [[likely]]
      return;
    while (walk.slot != detail::SlotBitmap::kNone && is_building(walk.slot)) free_.step(walk);
  }

  // What ~Pool and move assignment do with the objects: report them under debug checks, clear().
  void destroy_objects() {
    if (debug_ && size() > 0) report_live_objects();
    clear();
  }

  // How many objects' destructors are running: they stay live (and counted in size_) until those
  // return. O(destructors running).
  [[nodiscard]] std::size_t dying_count() const {
    std::size_t count = 0;
    for (const Slots* dying = dying_; dying != nullptr; dying = dying->outer) ++count;
    return count;
  }

  // Destroys the object left in `from` by its move to `to`. Its destructor may despawn what it
  // seems to own, itself included, by pointer or by handle (its handles now name `to`): both
  // slots count as dying meanwhile, so those despawns are ignored.
  void destroy_moved_from(std::uint32_t from, std::uint32_t to) {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      const Slots target{to, dying_};
      const Slots source{from, &target};
      dying_ = &source;
      // Meanwhile the source's slot shows the moved object's stamp, not live: handle_of(this)
      // there, and a walk that visits the dying source, give the handle of the object it became
      // (a despawn of which is ignored), not the one of the object whose id the slot took.
      Slot& place = slot_at(from);
      const Stamp traded = std::exchange(place.stamp, slot_at(to).stamp | Handles::kNotLive);
      object_at(from)->~T();
      place.stamp = traded;
      dying_ = target.outer;
    }
  }

  // Whether the destructor of the object in `slot` is running. O(destructors running).
  [[nodiscard]] bool is_dying(std::uint32_t slot) const {
    if constexpr (std::is_trivially_destructible_v<T>) return false;
    return holds(dying_, slot);
  }

  // Whether spawn's constructor of an object in `slot` is running, or compact()'s move of one into
  // or out of it. O(constructors running).
  [[nodiscard]] bool is_building(std::uint32_t slot) const { return holds(building_, slot); }

  [[nodiscard]] static bool holds(const Slots* chain, std::uint32_t slot) {
    for (; chain != nullptr; chain = chain->outer) {
      if (chain->slot == slot) return true;
    }
    return false;
  }

  // Whether a constructor or destructor of the pool's objects, or a walk over it, runs.
  [[nodiscard]] bool busy() const {
    return walks_ > 0 || dying_ != nullptr || building_ != nullptr;
  }

  void note_spawned() {
    if (++size_ > peak_) peak_ = size_;
  }

  // With debug checks, the object of every free slot below stamped_ holds kFreedFill: filled when
  // the slot gets its stamp (creation and growth write no slot) and at each despawn.
  void fill_freed(std::uint32_t slot) { fill_object(slot_at(slot)); }
  static void fill_object(Slot& slot) { detail::fill(slot.object, sizeof(T), detail::kFreedFill); }

  // Reported as a fault of `operation`, which is to put an object in the free slot `slot`. A slot
  // never used (from stamped_ on) holds what its memory held.
  void check_untouched_since_despawn(std::uint32_t slot, std::string_view operation) const {
    if (slot >= stamped_) return;
    const std::byte* bytes = slot_at(slot).object;
    if (!detail::holds_only(bytes, sizeof(T), detail::kFreedFill)) {
      fail_object(operation, bytes, ": the slot was written after its object was despawned");
    }
  }

  [[nodiscard]] detail::Message describe() const {
    detail::Message message;
    message << "poolalloc: ";
    detail::write_title(message, "Pool", name(), this) << " (object " << sizeof(T) << " B): ";
    return message;
  }

  void report_live_objects() const {
    if (leak_report_ == LeakReport::off) return;
    std::uint64_t listed = 0;
    for (const T& object : *this) {
      if (!detail::lists_leak(leak_report_, listed)) break;
      detail::Message message = describe();
      message << "live object " << static_cast<const void*>(std::addressof(object))
              << " destroyed with the pool\n";
      message.write_to_stderr();
      ++listed;
    }
    detail::Message message = describe();
    message << std::uint64_t{size_} << " objects still alive when the pool was destroyed";
    detail::write_leaks_listed(message, leak_report_, size_);
  }

  // A move of the pool from one of its objects' constructors or destructors or from a walk over it.
  void check_not_busy(std::string_view operation) const {
    if (!busy()) [[likely]]
      return;
    detail::Message message = describe();
    message
        << operation
        << " of the pool while a constructor or destructor of its objects or a walk over it runs";
    detail::fatal(message);
  }

  [[noreturn, POOLALLOC_COLD]] void fail_object(std::string_view operation, const void* object,
                                                std::string_view fault) const {
    detail::Message message = describe();
    message << operation << " of " << object << fault;
    detail::fatal(message);
  }
  [[noreturn, POOLALLOC_COLD]] void fail_during_compact(std::string_view operation) const {
    detail::Message message = describe();
    message << operation
            << " during compact(), from a move constructor or the moved-from object's destructor";
    detail::fatal(message);
  }
  [[noreturn, POOLALLOC_COLD]] void fail_handle(std::string_view operation,
                                                Handle<T> handle) const {
    detail::Message message = describe();
    message << operation << " of handle (id " << handle.id() << ", generation "
            << handle.generation() << "), which refers to no live object of this pool";
    detail::fatal(message);
  }

  Chunks chunks_;
  detail::AddressRange range_;  // none but for a Growth::growable pool that has grown
  detail::SlotBitmap free_;
  Handles handles_;
  // The slots [0, stamped_) hold stamps: every slot ever used, and no other, so that creating or
  // growing a pool touches none of its slots' pages. All the slots from stamped_ up are free, so
  // the lowest free slot is at most stamped_.
  std::uint32_t stamped_ = 0;
  std::uint32_t fast_spawn_slots_ = 0;    // update_fast_slots()
  std::uint32_t fast_despawn_slots_ = 0;  // update_fast_slots()
  std::size_t size_ = 0;
  std::size_t peak_ = 0;
  Growth growth_;
  bool debug_;
  bool destroying_ = false;
  mutable std::uint32_t walks_ = 0;  // for_each, clear() and compact() running (see shrink())
  // The slots whose destructors are running, innermost first: a chain through destroy_slot's
  // frames, empty (nullptr) but while a destructor runs.
  const Slots* dying_ = nullptr;
  // The slots whose objects spawn is constructing, innermost first (build_in's frames), and the
  // two slots of the object that compact() moves while its move constructor runs.
  const Slots* building_ = nullptr;
  // Whether compact() runs a move constructor or a moved-from destructor (see clear()).
  bool moving_ = false;
  LeakReport leak_report_ = LeakReport::summary;
  detail::Name name_;
};

}  // namespace poolalloc

template <class T>
struct std::hash<poolalloc::Handle<T>> {
  std::size_t operator()(poolalloc::Handle<T> handle) const noexcept {
    return std::hash<std::uint64_t>()(handle.packed());
  }
};
