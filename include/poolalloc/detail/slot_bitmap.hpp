// Which slots of a Pool<T> are free, one bit per slot (1 = free), with a summary word over every
// 64 words (bit w set = word w has a free slot). take_lowest_free() so always hands out the
// lowest free slot: live objects stay packed at the front, in address order, however randomly
// they were freed.
//
// Unlike a free list threaded through the blocks, finding a slot reads no freed block: the bits
// of 10,000 slots take 1.3 KB and stay in L1, so taking and releasing are a few ALU operations
// each, with no load that waits on the previous free.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace poolalloc::detail {

class SlotBitmap {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // Without slots it holds no memory. A move leaves `other` without slots.
  SlotBitmap() = default;
  SlotBitmap(SlotBitmap&& other) noexcept { *this = std::move(other); }
  SlotBitmap& operator=(SlotBitmap&& other) noexcept {
    storage_ = std::exchange(other.storage_, {});
    summary_ = std::exchange(other.summary_, {});
    size_ = std::exchange(other.size_, 0);
    first_word_ = std::exchange(other.first_word_, 0);
    words_ = storage_.empty() ? &no_words_ : storage_.data();
    other.words_ = &no_words_;
    return *this;
  }
  SlotBitmap(const SlotBitmap&) = delete;
  SlotBitmap& operator=(const SlotBitmap&) = delete;
  ~SlotBitmap() = default;

  // Takes the memory that add_free_slots(count) needs; throws std::bad_alloc (and changes nothing
  // else) when it cannot be had. Exactly the room needed (one bit a slot): resize alone may double
  // it.
  void reserve(std::uint32_t count) {
    const std::size_t words = words_for(std::size_t{size_} + count);
    storage_.reserve(words + 1);                      // the last word: the zero sentinel
    if (!storage_.empty()) words_ = storage_.data();  // where the words are now
    summary_.reserve((words + 63) / 64);
  }

  // Slots [size(), size() + count) join as free slots. Allocates only what reserve(count) did not.
  void add_free_slots(std::uint32_t count) {
    reserve(count);
    const std::uint32_t end = size_ + count;
    storage_.resize(words_for(end) + 1);
    words_ = storage_.data();
    summary_.resize((words_for(end) + 63) / 64);
    for (std::uint32_t slot = size_; slot < end; ++slot) release(slot);
    size_ = end;
  }

  // Slots [end, size()), all free, leave; their memory stays for slots that join later.
  void remove_slots_from(std::uint32_t end) {
    size_ = end;
    const std::uint32_t words = word_count();
    storage_.resize(std::size_t{words} + 1);
    storage_[words] = 0;  // the sentinel
    summary_.resize((std::size_t{words} + 63) / 64);
    if (words > 0) {
      storage_[words - 1] &= below(end - (words - 1) * 64);
      if (storage_[words - 1] == 0) summary_.back() &= ~bit(words - 1);
      summary_.back() &= below(words - static_cast<std::uint32_t>(summary_.size() - 1) * 64);
    }
    first_word_ = std::min(first_word_, words);
  }

  // The lowest free slot, now used; kNone when every slot is used. About 10 instructions while
  // the lowest word with a free slot has more; a summary word is read only when it runs out.
  [[nodiscard]] std::uint32_t take_lowest_free() {
    if (words_[first_word_] == 0 && lowest_free() == kNone) [[unlikely]]
      return kNone;
    const std::uint32_t slot =
        first_word_ * 64 + static_cast<std::uint32_t>(std::countr_zero(words_[first_word_]));
    // Clearing the lowest set bit (not the bit of `slot`) keeps the chain from one take to the
    // next at a load, one instruction and a store.
    std::uint64_t& word = words_[first_word_];
    word &= word - 1;
    if (word == 0) summary_[first_word_ / 64] &= ~bit(first_word_);
    return slot;
  }

  [[nodiscard]] std::uint32_t lowest_free() {
    if (words_[first_word_] == 0) [[unlikely]] {  // the sentinel, past the last word, is 0
      first_word_ = first_word_with_a_free_slot();
      if (first_word_ == word_count()) return kNone;
    }
    return first_word_ * 64 + static_cast<std::uint32_t>(std::countr_zero(words_[first_word_]));
  }

  // Marks a free slot used.
  void take(std::uint32_t slot) {
    std::uint64_t& word = words_[slot / 64];
    word &= ~bit(slot);
    if (word == 0) summary_[slot / 4096] &= ~bit(slot / 64);
  }

  // Marks a used slot free. O(1), about 8 instructions.
  void release(std::uint32_t slot) {
    std::uint64_t& word = words_[slot / 64];
    // The summary changes only when the word had no free slot: most releases leave it unread.
    if (word == 0) summary_[slot / 4096] |= bit(slot / 64);
    word |= bit(slot);
    if (slot / 64 < first_word_) first_word_ = slot / 64;
  }

  [[nodiscard]] bool is_free(std::uint32_t slot) const { return words_[slot / 64] & bit(slot); }

  // The highest used slot below `end`, or kNone. O(words scanned).
  [[nodiscard]] std::uint32_t highest_used_below(std::uint32_t end) const {
    for (std::uint32_t word = (end + 63) / 64; word-- > 0;) {
      std::uint64_t used = ~words_[word] & below(end - word * 64);
      if (used != 0) return word * 64 + 63 - static_cast<std::uint32_t>(std::countl_zero(used));
    }
    return kNone;
  }

  // A walk over the used slots in ascending order: the slot it stands at (kNone past the last),
  // its word, and the used slots above it in that word, as the walk last read them. The word is
  // kept apart from the slot so that reading it again waits for no computation of the slot: a
  // step costs about 2 cycles of latency where it cost 10.
  struct Walk {
    std::uint32_t slot = kNone;
    std::uint32_t word = 0;
    std::uint64_t ahead = 0;
  };

  [[nodiscard]] Walk first_used() const { return walk_from(0); }

  // Moves `walk` on to the next used slot. Each word is read once for all its slots, and again
  // at each step (one load, in L1), so that a slot released since the walk read it is skipped;
  // a slot taken since may or may not be visited.
  void step(Walk& walk) const {
    walk.ahead &= ~words_[walk.word];
    if (walk.ahead == 0) {
      walk = walk_from(walk.word + 1);
      return;
    }
    walk.slot = walk.word * 64 + static_cast<std::uint32_t>(std::countr_zero(walk.ahead));
    walk.ahead &= walk.ahead - 1;
  }

  // Calls f(slot) for every used slot, in ascending order, and on_word(word) before the first of
  // each word's. f may release the slot it is given or any other: a slot released before the walk
  // reaches it is not visited. The walk of step(), written as two loops: the compiler then keeps
  // the word and its bits in registers and tests for the end once a word, not once a slot (about
  // 8 % faster at half occupancy).
  template <class F, class OnWord = void (*)(std::uint32_t)>
  void for_each_used(
      F&& f, OnWord&& on_word = [](std::uint32_t) {}) const {
    for (std::uint32_t word = 0; word < word_count(); ++word) {
      std::uint64_t used = ~words_[word] & below(size_ - word * 64);
      if (used != 0) on_word(word);
      while (used != 0) {
        f(word * 64 + static_cast<std::uint32_t>(std::countr_zero(used)));
        used &= used - 1;
        used &= ~words_[word];  // the slots f released
      }
    }
  }

  [[nodiscard]] std::uint32_t size() const { return size_; }

 private:
  static constexpr std::uint64_t bit(std::uint32_t index) {
    return std::uint64_t{1} << (index % 64);
  }
  // The bits of the first `count` slots of a word (all of them from 64 on).
  static constexpr std::uint64_t below(std::uint32_t count) {
    return count >= 64 ? ~std::uint64_t{0} : bit(count) - 1;
  }

  static constexpr std::size_t words_for(std::size_t slots) { return (slots + 63) / 64; }

  [[nodiscard]] std::uint32_t word_count() const {
    return static_cast<std::uint32_t>(words_for(size_));
  }

  // The walk at the first used slot of word `word` or above.
  [[nodiscard]] Walk walk_from(std::uint32_t word) const {
    for (; word < word_count(); ++word) {
      const std::uint64_t used = ~words_[word] & below(size_ - word * 64);
      if (used != 0) {
        const auto slot = word * 64 + static_cast<std::uint32_t>(std::countr_zero(used));
        return {slot, word, used & (used - 1)};
      }
    }
    return {};
  }

  // The lowest word with a free slot, or word_count(). None lies below first_word_.
  [[nodiscard]] std::uint32_t first_word_with_a_free_slot() const {
    for (std::size_t s = first_word_ / 64; s < summary_.size(); ++s) {
      if (summary_[s] != 0)
        return static_cast<std::uint32_t>(s * 64 + std::countr_zero(summary_[s]));
    }
    return word_count();
  }

  // One bit per slot, then a zero word: the sentinel that first_word_ points at when every slot
  // is used, so that finding the lowest free slot needs no bounds check. words_ points at
  // storage_, or at no_words_ (a sentinel alone, never written) while there are no slots, so that
  // a bitmap without slots needs no memory.
  static constinit inline std::uint64_t no_words_ = 0;
  std::vector<std::uint64_t> storage_;
  std::uint64_t* words_ = &no_words_;
  std::vector<std::uint64_t> summary_;
  std::uint32_t size_ = 0;
  std::uint32_t first_word_ = 0;  // no word below it has a free slot
};

}  // namespace poolalloc::detail
