// Where the slots of a Pool<T> lie: its chunks, each a run of slots (of type T here: the pool's
// object and its stamp) numbered on from the last, and the way from a slot's number to its address
// and back.
//
// From a slot to its address in O(1) however many chunks there are, with one table of 32 bases
// (256 bytes, which stay in the L1 cache): every chunk after the first ends at a power of two of
// slots, so that the slots of one binary order [2^k, 2^(k+1)) past the first chunk lie in one
// chunk, and the table holds, for each order, the base of that chunk (the address that its slot 0
// would have). A slot past the first chunk is so a bit scan, one load from the table and a
// multiply-add, as in a pool of one chunk but for the scan and the load. Since every chunk after
// the first begins and ends at a multiple of 64 slots (its end a power of two of at least 128) but
// the second, which begins where the first ends, the 64 slots of a word of the pool's bitmap lie
// in one chunk, but for the word where the first chunk ends.
//
// From an address to its slot (despawn, handle_of): the first chunk, then the others from the
// last down. Chunks that double, as a growable pool's do, hold half the slots in the last, a
// quarter in the one before, and so on: two chunks looked at on average, O(chunks) at worst.
#pragma once

#include <algorithm>
#include <array>
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

  // Takes the memory that add() needs; throws std::bad_alloc (and changes nothing else) when it
  // cannot be had.
  void reserve() { chunks_.reserve(chunks_.size() + 1); }

  // `count` slots at `slots` join as the slots [capacity(), capacity() + count), a count that
  // capacity_for() gave. Allocates only what reserve() did not.
  void add(T* slots, std::uint32_t count) {
    reserve();
    const std::uint32_t first = capacity_;
    chunks_.push_back({slots, first, count, std::uintptr_t{count} * sizeof(T)});
    capacity_ = first + count;
    if (chunks_.size() == 1) {
      first_ = chunks_.front();
      base_by_zeros_[0] = reinterpret_cast<std::uintptr_t>(slots);
      return;
    }
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(slots) - first * sizeof(T);
    for (unsigned zeros = zeros_of(capacity_ - 1); zeros <= zeros_of(first); ++zeros) {
      base_by_zeros_[zeros] = base;
    }
  }

  // Takes the last chunk away and returns it; the caller gives its memory back. Never the first.
  // (The bases of its orders stay in the table, read for no slot below capacity().)
  Chunk remove_last() {
    const Chunk last = chunks_.back();
    chunks_.pop_back();
    capacity_ = last.first;
    return last;
  }

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t count() const { return chunks_.size(); }
  [[nodiscard]] const std::vector<Chunk>& chunks() const { return chunks_; }
  // The first chunk, or one of no slots.
  [[nodiscard]] const Chunk& first() const { return first_; }

  // O(1): the first chunk's slots directly, the others' through their order's base.
  [[nodiscard]] T* address_of(std::uint32_t slot) const {
    if (slot < first_.count) [[likely]]
      return first_.slots + slot;
    return &past_first(slot);
  }

  // address_of(slot) for a slot past the first chunk and below capacity(): a bit scan, a load from
  // the table of bases and a multiply-add.
  [[nodiscard]] T& past_first(std::uint32_t slot) const {
    return *reinterpret_cast<T*>(base_by_zeros_[zeros_of(slot)] + slot * sizeof(T));
  }

  // address_of(slot) as an integer, for any slot number (an address outside the chunks for one
  // of capacity() or more: the caller checks the slot before it reads there), without a branch:
  // the table's entry 0, which no slot's leading zeros name (slots are below 2^31), holds the
  // first chunk's base, and a slot there takes it (its index masked to 0), so that
  // slots spread at random across the first chunk and the others take no mispredicted branch. (The
  // index is masked: g++ 12 made a branch of a conditional expression.)
  [[nodiscard]] std::uintptr_t address_without_branch(std::uint32_t slot) const {
    const unsigned past_first = 0u - static_cast<unsigned>(slot >= first_.count);  // all ones
    return base_by_zeros_[zeros_of(slot) & past_first] + std::uintptr_t{slot} * sizeof(T);
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
    if (chunks_.size() < 2 || lowest + 63 < first_.count) return {first, first, 0};
    if (lowest >= first_.count) {
      const std::uintptr_t base = base_by_zeros_[zeros_of(lowest)];
      return {base, base, 0};
    }
    return {first, base_by_zeros_[zeros_of(first_.count)], first_.count};
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

  // The leading zero bits of a slot past the first, which name its binary order [2^k, 2^(k+1))
  // (k = 31 - zeros): a bit scan and a xor (bsr), or one lzcnt. slot | 1 lets the compiler drop
  // the case of 0, which is never past the first chunk. (bit_width(slot) - 1 took g++ 12 three
  // instructions more in a loop of gets.)
  static unsigned zeros_of(std::uint32_t slot) {
    return static_cast<unsigned>(std::countl_zero(slot | 1));
  }

  std::vector<Chunk> chunks_;
  Chunk first_{};  // chunks_.front(), or none: kept here, where most calls look first
  // The base of the chunk past the first that holds the slots of each binary order, by the slots'
  // leading zero bits (1 to 31: slots below 2^31); at 0, the first chunk's.
  std::array<std::uintptr_t, 32> base_by_zeros_{};
  std::uint32_t capacity_ = 0;
};

}  // namespace poolalloc::detail
