// Where the slots of a Pool<T> lie: its chunks, each a run of slots (of type T here: the pool's
// object and its stamp) numbered on from the last, and the way from a slot's number to its address
// and back.
//
// From a slot to its address in O(1) however many chunks there are: a pool whose chunks form one
// run (each begins where the one before ends, as a growable pool's do in its reserved range,
// detail/address_range.hpp; or one chunk) from the run's base, which the rest of this comment calls
// the first chunk; a pool grown in chunks apart from a table of the base of each 64-slot word's
// chunk (the address that the chunk's slot 0 would have), 8 bytes per 64 slots, which a pool of one
// chunk does not have. Every chunk after the first begins and ends at a multiple of 64 slots (its
// end a power of two of at least 128) but the second, which begins where the first ends, so that
// the 64 slots of a word (of the table, and of the pool's bitmap) lie in one chunk, but for the
// word where the first chunk ends when it ends inside one. A slot past the first chunk is so a
// shift, one load from the table and a multiply-add, as in a pool of one chunk but for the shift
// and the load. (A table of 32 bases, one per binary order of slot numbers, indexed with a bit
// scan, took 256 bytes whatever the pool's size, but bsr is slow on the AMD EPYC the anchors run
// on: a grown pool's resolve took 1.4x a full-size pool's time with it, about 1.1x with the shift.)
//
// From an address to its slot (despawn, handle_of): the first chunk, then the others from the
// last down. Chunks that double, as a growable pool's do, hold half the slots in the last, a
// quarter in the one before, and so on: two chunks looked at on average, O(chunks) at worst.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace poolalloc::detail {

template <class T>
class SlotChunks {
 public:
  struct Chunk {
    T* slots;
    std::uint32_t first;  // the slot number of slots[0]
    std::uint32_t count;
    std::uintptr_t bytes;  // count * sizeof(T): despawn's bounds check takes no multiply

    [[nodiscard]] std::uintptr_t offset_of(const void* object) const {
      return reinterpret_cast<std::uintptr_t>(object) - reinterpret_cast<std::uintptr_t>(slots);
    }
    [[nodiscard]] bool holds(const void* object) const { return offset_of(object) < bytes; }
  };

  // The fewest slots of a chunk after the first.
  static constexpr std::uint32_t kLeastChunk = 64;

  // The capacity that the next chunk brings a pool of capacity() slots to, for at least `wanted`
  // slots in all: the first chunk is `wanted` slots, a later one ends at the least power of two of
  // at least `wanted` and kLeastChunk slots more than capacity().
  [[nodiscard]] std::size_t capacity_for(std::size_t wanted) const {
    if (chunks_.empty()) return wanted;
    return std::bit_ceil(std::max(wanted, std::size_t{capacity_} + kLeastChunk));
  }

  // Takes the memory that add() of a chunk of `count` slots at `slots` needs (the table of bases
  // only for a chunk apart from the run); throws std::bad_alloc (and changes nothing else) when it
  // cannot be had.
  void reserve(const T* slots, std::uint32_t count) {
    chunks_.reserve(chunks_.size() + 1);
    if (!one_run_to(capacity_, slots)) base_by_word_.reserve(words(capacity_ + count) + 1);
  }

  // `count` slots at `slots` join as the slots [capacity(), capacity() + count), a count that
  // capacity_for() gave. Allocates only what reserve() did not.
  void add(T* slots, std::uint32_t count) {
    reserve(slots, count);
    const std::uint32_t first = capacity_;
    const bool extends_the_run = one_run_to(first, slots);
    chunks_.push_back({slots, first, count, std::uintptr_t{count} * sizeof(T)});
    capacity_ = first + count;
    if (extends_the_run) {
      first_.slots = chunks_.front().slots;
      set_run(capacity_);
      return;
    }
    if (base_by_word_.empty()) {  // the first chunk's words, and entry 0 (see address_past())
      base_by_word_.assign(words(first) + 1, reinterpret_cast<std::uintptr_t>(first_.slots));
    }
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(slots) - first * sizeof(T);
    base_by_word_.resize(words(capacity_) + 1, base);
    base_by_word_[first / 64 + 1] = base;  // the word where it begins, which the first may share
  }

  // Takes the last chunk away and returns it; the caller gives its memory back. Never the first.
  Chunk remove_last() {
    const Chunk last = chunks_.back();
    chunks_.pop_back();
    capacity_ = last.first;
    if (first_.count > capacity_) set_run(capacity_);
    if (one_run()) {
      base_by_word_.clear();
    } else {
      base_by_word_.resize(words(capacity_) + 1);  // smaller: allocates nothing
    }
    return last;
  }

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t count() const { return chunks_.size(); }
  [[nodiscard]] const std::vector<Chunk>& chunks() const { return chunks_; }
  // The run of slots from slot 0: the first chunk and each chunk after it that begins where the
  // one before ends (a growable pool's in its reserved range, detail/address_range.hpp); one of no
  // slots in a pool of none.
  [[nodiscard]] const Chunk& first() const { return first_; }
  // Whether every slot lies in first(): a slot's address is then its base plus the slot's offset.
  [[nodiscard]] bool one_run() const { return first_.count == capacity_; }

  // O(1): the first chunk's slots directly, the others' through their order's base.
  [[nodiscard]] T* address_of(std::uint32_t slot) const {
    if (slot < first_.count) [[likely]]
      return first_.slots + slot;
    return &past_first(slot);
  }

  // address_of(slot) for a slot past the first chunk and below capacity(): a shift, a load from
  // the table and a multiply-add.
  [[nodiscard]] T& past_first(std::uint32_t slot) const {
    return *reinterpret_cast<T*>(base_by_word_[slot / 64 + 1] + slot * sizeof(T));
  }

  // Whether a 64-slot word holds slots of the first chunk and of the second: a pool of more than
  // one chunk whose first chunk does not end at a multiple of 64 slots.
  [[nodiscard]] bool split() const { return split_; }

  // address_of(slot) as an integer, without a branch, for a slot below capacity() of a pool of
  // more than one chunk: the base of the slot's word, from the table, plus the slot's offset.
  // Entry w + 1 holds word w's base, so that where the first chunk is split (split()), the index
  // of a slot of the first chunk is masked to 0, whose entry holds the first chunk's base: slots
  // spread at random across the first chunk and the others take no mispredicted branch (five
  // instructions more; g++ 12 made a branch of a conditional expression).
  [[nodiscard]] std::uintptr_t address_past(std::uint32_t slot) const {
    std::size_t index = slot / 64 + 1;
    if (split_) index &= 0u - static_cast<unsigned>(slot >= first_.count);  // all ones
    return base_by_word_[index] + std::uintptr_t{slot} * sizeof(T);
  }

  // Where the slots of one word lie: the slots below `split` in the chunk of base `low`, the others
  // in the chunk of base `high`; a base is the address that slot 0 would have in its chunk
  // (reached in integers: it may lie outside any object). A walk takes it once a word.
  struct Place {
    std::uintptr_t low;
    std::uintptr_t high;
    std::uint32_t split;

    [[nodiscard]] T* address_of(std::uint32_t slot) const {
      return reinterpret_cast<T*>((slot < split ? low : high) + slot * sizeof(T));
    }
    // address_of with a branch on the split, which a word's slots all take the same way, for a
    // walk that writes into each slot (clear()): there address_of's conditional move, on the path
    // to each store's address, made a pool of one chunk's clear() about 7 % slower (g++ 12), where
    // a walk that reads (for_each) is about 6 % faster with it than with the branch.
    [[nodiscard]] T* address_for_stores(std::uint32_t slot) const {
      if (slot < split) [[unlikely]]
        return reinterpret_cast<T*>(low + slot * sizeof(T));
      return reinterpret_cast<T*>(high + slot * sizeof(T));
    }
  };

  // O(1): only the word where the first chunk ends may be split between two chunks.
  [[nodiscard]] Place place_of_word(std::uint32_t word) const {
    const auto first = reinterpret_cast<std::uintptr_t>(first_.slots);
    const std::uint32_t lowest = word * 64;
    if (one_run() || lowest + 63 < first_.count) return {first, first, 0};
    const std::uintptr_t base = base_by_word_[word + 1];
    if (lowest >= first_.count) return {base, base, 0};
    return {first, base, first_.count};
  }

  // The number of the slot of the first chunk that `object` points at the start of, or a number
  // of first().count or more when it points at no slot's start there (inside a slot, below the
  // chunk or past it). A subtraction, a multiply and a rotation, without a branch: with
  // sizeof(T) = 2^k * m (m odd), the offset times m's inverse modulo 2^N, rotated right by k, is
  // the offset's quotient by sizeof(T) for a multiple of it, and above (2^N - 1) / sizeof(T), so
  // above any count of slots, for any other offset (the test of divisibility by multiplication
  // of Granlund and Montgomery). So one compare with a count of the first chunk's slots checks the
  // bounds and the start of a slot, and gives the slot, where a bounds check, a test of
  // divisibility and a division took two multiplies and three compares.
  [[nodiscard]] std::uintptr_t first_chunk_slot_of(const void* object) const {
    constexpr int kSizeShift = std::countr_zero(sizeof(T));
    constexpr std::uintptr_t kOddInverse = odd_inverse(sizeof(T) >> kSizeShift);
    static_assert((sizeof(T) >> kSizeShift) * kOddInverse == 1);
    const std::uintptr_t offset = first_.offset_of(object);
    return std::rotr(offset * kOddInverse, kSizeShift);
  }

  // The chunk whose slots' bytes `object` points into, or nullptr.
  [[nodiscard]] const Chunk* chunk_holding(const void* object) const {
    if (first_.holds(object)) [[likely]]
      return &first_;
    for (auto chunk = chunks_.rbegin(); chunk != chunks_.rend(); ++chunk) {
      if (chunk->holds(object)) return &*chunk;
    }
    return nullptr;
  }

 private:
  // The inverse of `odd` modulo 2^N (N the bits of std::uintptr_t): Newton's iteration
  // x <- x * (2 - odd * x) doubles the low bits of x that are right, and x = odd has 3 right
  // (odd * odd is 1 modulo 8 for every odd number). (A function, not a constant of the class, so
  // that a T that holds a Pool<T> may still be incomplete where the class is.)
  static constexpr std::uintptr_t odd_inverse(std::uintptr_t odd) {
    std::uintptr_t inverse = odd;
    for (int bits = 3; bits < std::numeric_limits<std::uintptr_t>::digits; bits *= 2) {
      inverse *= 2 - odd * inverse;
    }
    return inverse;
  }

  // Whether a chunk at `slots` that begins at slot `first` extends the run of first(): whether it
  // is the first chunk, or begins where the run, which holds every slot before it, ends.
  [[nodiscard]] bool one_run_to(std::uint32_t first, const T* slots) const {
    return first == first_.count && (chunks_.empty() || slots == first_.slots + first_.count);
  }

  // The run of first() ends at slot `end`.
  void set_run(std::uint32_t end) {
    first_.count = end;
    first_.bytes = std::uintptr_t{end} * sizeof(T);
    split_ = end % 64 != 0;
  }

  // The 64-slot words that `slots` slots take.
  static std::size_t words(std::uint32_t slots) { return (std::size_t{slots} + 63) / 64; }

  std::vector<Chunk> chunks_;
  Chunk first_{};  // first(): kept here, where most calls look first
  // With more than one chunk: at w + 1, the base of the chunk that holds word w's slots (for the
  // word that the first chunk and the second share, the second's); at 0, the first chunk's. Empty
  // with one chunk.
  std::vector<std::uintptr_t> base_by_word_;
  std::uint32_t capacity_ = 0;
  bool split_ = false;  // split(): the run of first() does not end at a multiple of 64 slots
};

}  // namespace poolalloc::detail
