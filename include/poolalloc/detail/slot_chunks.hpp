// Where the slots of a Pool<T> lie: its chunks, each a run of slots (of type T here: the pool's
// object and its stamp) numbered on from the last, and the way from a slot's number to its address
// and back.
//
// From a slot to its address in O(1) however many chunks there are: a record per 64 slots (per
// word of the pool's bitmap) holds the base address of the chunk its slots are in, so that a
// walk or a spawn in a grown pool computes each address as one in a pool of one chunk does,
// with one more load from a table that stays in the caches (24 bytes per 64 slots, kept only
// once there is a second chunk: the first chunk's slots are found without it). Every chunk but
// the first has at least 64 slots, so 64 slots lie in at most two chunks: the record holds both
// bases and the slot where the second begins. A resolve of one slot at random (Pool<T>::get)
// reads a second table, of the one base of each word's slots, marked where the word is split
// between two chunks: 8 bytes per 64 slots, 16 KB for 131,072 slots where the records take 48 KB,
// more of which stays in the L1 cache.
//
// From an address to its slot (despawn, handle_of): the first chunk, then the others from the
// last down. Chunks that double, as a growable pool's do, hold half the slots in the last, a
// quarter in the one before, and so on: two chunks looked at on average, O(chunks) at worst.
#pragma once

#include <cstddef>
#include <cstdint>
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

  // Takes the memory that add(slots, count) needs; throws std::bad_alloc (and changes nothing
  // else) when it cannot be had.
  void reserve(std::uint32_t count) {
    chunks_.reserve(chunks_.size() + 1);
    if (!chunks_.empty()) {
      by_word_.reserve(words_for(std::size_t{capacity_} + count));
      base_by_word_.reserve(words_for(std::size_t{capacity_} + count));
    }
  }

  // `count` slots at `slots` join as the slots [capacity(), capacity() + count). Allocates only
  // what reserve(count) did not. A chunk after the first has at least kLeastChunk slots.
  void add(T* slots, std::uint32_t count) {
    static_assert(alignof(T) > 1, "kSplit needs bit 0 of a base");
    reserve(count);
    const std::uint32_t first = capacity_;
    chunks_.push_back({slots, first, count, std::uintptr_t{count} * sizeof(T)});
    capacity_ = first + count;
    if (chunks_.size() == 1) {
      first_ = chunks_.front();
      return;
    }
    if (by_word_.empty()) {  // the second chunk: the first's words get their records
      const auto base = reinterpret_cast<std::uintptr_t>(first_.slots);
      by_word_.assign(words_for(first), {base, base, 0});
      base_by_word_.assign(words_for(first), base);
    }
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(slots) - first * sizeof(T);
    if (first % 64 != 0) {  // the chunk begins inside a word that the chunk before began
      Word& word = by_word_.back();
      word.low = word.high;
      word.high = base;
      word.split = first;
      base_by_word_.back() = base | kSplit;
    }
    by_word_.resize(words_for(capacity_), {base, base, 0});
    base_by_word_.resize(words_for(capacity_), base);
  }

  // Takes the last chunk away and returns it; the caller gives its memory back. Never the first.
  Chunk remove_last() {
    const Chunk last = chunks_.back();
    chunks_.pop_back();
    capacity_ = last.first;
    if (chunks_.size() == 1) {  // the memory stays, for when the pool grows again
      by_word_.clear();
      base_by_word_.clear();
      return last;
    }
    by_word_.resize(words_for(capacity_));
    base_by_word_.resize(words_for(capacity_));
    if (capacity_ % 64 != 0) {  // the word where it began is the chunk's before alone again
      Word& word = by_word_.back();
      word.high = word.low;
      word.split = 0;
      base_by_word_.back() = word.low;
    }
    return last;
  }

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t count() const { return chunks_.size(); }
  [[nodiscard]] const std::vector<Chunk>& chunks() const { return chunks_; }
  // The first chunk, or one of no slots.
  [[nodiscard]] const Chunk& first() const { return first_; }

  // O(1): the first chunk's slots directly, the others' through their word's record.
  [[nodiscard]] T* address_of(std::uint32_t slot) const {
    if (slot < first_.count) [[likely]]
      return first_.slots + slot;
    return by_word_[slot / 64].address_of(slot);
  }

  // address_of(slot) for a slot below capacity(), else nullptr; in a grown pool, from the word's
  // base alone but where the word is split.
  [[nodiscard]] T* address_if_held(std::uint32_t slot) const {
    if (slot < first_.count) [[likely]]
      return first_.slots + slot;
    return slot < capacity_ ? &past_first(slot) : nullptr;
  }

  // address_of(slot) for a slot past the first chunk and below capacity().
  [[nodiscard]] T& past_first(std::uint32_t slot) const {
    const std::uintptr_t base = base_by_word_[slot / 64];
    if (base & kSplit) [[unlikely]]
      return *by_word_[slot / 64].address_of(slot);
    return *reinterpret_cast<T*>(base + slot * sizeof(T));
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
  };

  [[nodiscard]] Place place_of_word(std::uint32_t word) const {
    if (by_word_.empty()) {
      const auto base = reinterpret_cast<std::uintptr_t>(first_.slots);
      return {base, base, 0};
    }
    return by_word_[word];
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
  using Word = Place;

  static constexpr std::size_t words_for(std::size_t slots) { return (slots + 63) / 64; }

  // Set in base_by_word_ where a word's slots lie in two chunks. A base is a multiple of
  // alignof(T) (a chunk's address less a number of slots), so its bit 0 is free.
  static constexpr std::uintptr_t kSplit = 1;

  std::vector<Chunk> chunks_;
  Chunk first_{};  // chunks_.front(), or none: kept here, where most calls look first
  std::vector<Word> by_word_;
  // The base of each word's chunk (as by_word_[w].high), with kSplit where the word is split.
  std::vector<std::uintptr_t> base_by_word_;
  std::uint32_t capacity_ = 0;
};

}  // namespace poolalloc::detail
