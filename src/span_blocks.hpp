// The blocks of one span: which are free, and the next one to hand out. Never-used blocks are
// handed out by a bump index, as the paper's pool does (carving a span writes nothing into it);
// blocks given back are bits in a bitmap that lives apart from the blocks, with the span
// records (pool_region.hpp). So:
// - nothing is read from a free block to carve it: a refill of a batch from a span whose blocks
//   came back in a random order is a scan of a few words of one bitmap, not a chain of
//   dependent cache misses through the blocks (a batch of 256 blocks was 256 of them);
// - blocks are handed out lowest first, so the blocks that a program allocates one after the
//   other lie in address order, as they do on a fresh span, however they were freed: what it
//   then walks together, the prefetcher can follow;
// - nothing a program writes into a freed block can redirect a later carve, and a block given
//   back twice is recognised by its bit.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "poolalloc/detail/lazy_block_list.hpp"

namespace poolalloc::internal {

// A span's bitmap of the blocks that came back, in two parts: its head, the first kHeadWords
// words, which is all a span of blocks of 128 bytes or more uses, and its tail, the rest, which
// only the smaller classes reach (pool_region.hpp lays the heads of many spans out side by side,
// so that the spans of the large classes share a page of bitmaps among many, not four). Bit i is
// block i.
struct SpanBitmap {
  static constexpr std::uint32_t kHeadWords = 16;  // 1,024 blocks
  std::uint64_t* head;
  std::uint64_t* tail;
  std::uint64_t& operator[](std::uint32_t word) const {
    return word < kHeadWords ? head[word] : tail[word - kHeadWords];
  }
};

class SpanBlocks {
 public:
  // A span holds at most this many blocks (of the smallest class), and its bitmap as many bits.
  static constexpr std::uint32_t kMaxBlocks = 8192;
  static constexpr std::uint32_t kBitmapWords = kMaxBlocks / 64;

  constexpr SpanBlocks() = default;
  // Blocks of `block_size` bytes over `span_size` bytes, none handed out yet. The span's bitmap,
  // kBitmapWords words, must be all zero (as mapped, or as clear_bitmap leaves it): carving a
  // span touches not even its bitmap until blocks come back.
  SpanBlocks(std::uint32_t block_size, std::uint32_t span_size)
      : block_size_(block_size), block_count_(span_size / block_size), divider_(block_size) {}

  // Of an empty span, before it serves another class: its bits, all set, are cleared.
  void clear_bitmap(SpanBitmap bitmap) const {
    const std::uint32_t words = (initialised_ + 63) / 64;
    std::fill_n(bitmap.head, std::min(words, SpanBitmap::kHeadWords), std::uint64_t{0});
    if (words > SpanBitmap::kHeadWords)
      std::fill_n(bitmap.tail, words - SpanBitmap::kHeadWords, std::uint64_t{0});
  }

  // The index of a free block, which leaves the free ones: the lowest given back, else the next
  // never-used one. Not full(). Amortised O(1): the scan for a word with a bit only moves up
  // while blocks are taken, at most kBitmapWords words over a span's whole carving.
  [[nodiscard]] std::uint32_t take(SpanBitmap bitmap) {
    if (given_back_ == 0) return initialised_++;
    while (bitmap[lowest_word_] == 0) ++lowest_word_;
    std::uint64_t& word = bitmap[lowest_word_];
    const auto index = lowest_word_ * 64 + static_cast<std::uint32_t>(std::countr_zero(word));
    word &= word - 1;
    --given_back_;
    return index;
  }

  // Takes back the block at `index`, one handed out; false, changing nothing, if it is free
  // already.
  [[nodiscard]] bool give_back(std::uint32_t index, SpanBitmap bitmap) {
    std::uint64_t& word = bitmap[index / 64];
    const std::uint64_t bit = std::uint64_t{1} << (index % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    lowest_word_ = std::min(lowest_word_, index / 64);
    ++given_back_;
    return true;
  }

  // Shared spans (shared_spans.hpp) hand their blocks out by runs of `count` blocks (at most 64)
  // from `first`, never one at a time: the next run of never-used ones, or a run whose blocks all
  // came back, which then leave the free ones.
  [[nodiscard]] bool has_never_used(std::uint32_t count) const {
    return block_count_ - initialised_ >= count;
  }
  [[nodiscard]] std::uint32_t take_never_used(std::uint32_t count) {
    const std::uint32_t first = initialised_;
    initialised_ += count;
    return first;
  }
  [[nodiscard]] static bool all_given_back(SpanBitmap bitmap, std::uint32_t first,
                                           std::uint32_t count) {
    bool all = true;
    for_each_run_word(bitmap, first, count, [&](std::uint64_t& word, std::uint64_t mask) {
      all = all && (word & mask) == mask;
    });
    return all;
  }
  void take_given_back(SpanBitmap bitmap, std::uint32_t first, std::uint32_t count) {
    for_each_run_word(bitmap, first, count,
                      [&](std::uint64_t& word, std::uint64_t mask) { word &= ~mask; });
    given_back_ -= count;
  }

  // Calls f(index) for every block given back and not taken since, lowest first.
  template <class F>
  void for_each_given_back(SpanBitmap bitmap, F f) const {
    for (std::uint32_t w = lowest_word_, left = given_back_; left != 0; ++w) {
      for (std::uint64_t word = bitmap[w]; word != 0 && left != 0; word &= word - 1, --left)
        f(w * 64 + static_cast<std::uint32_t>(std::countr_zero(word)));
    }
  }

  // Whether the next take() hands out a never-used block (whose page may never have been
  // touched).
  [[nodiscard]] bool next_is_never_used() const { return given_back_ == 0; }
  [[nodiscard]] bool full() const { return given_back_ == 0 && initialised_ == block_count_; }
  [[nodiscard]] bool empty() const { return given_back_ == initialised_; }
  [[nodiscard]] std::uint32_t used_count() const { return initialised_ - given_back_; }
  [[nodiscard]] std::uint32_t given_back_count() const { return given_back_; }
  // Blocks [0, initialised_count()) were handed out at least once.
  [[nodiscard]] std::uint32_t initialised_count() const { return initialised_; }
  [[nodiscard]] std::uint32_t block_count() const { return block_count_; }
  [[nodiscard]] std::uint32_t block_size() const { return block_size_; }

  // Whether `offset` bytes from the span's start lies in a whole block, and is where one starts.
  [[nodiscard]] bool contains(std::uint32_t offset) const {
    return offset < block_size_ * block_count_;
  }
  [[nodiscard]] bool is_block_offset(std::uint32_t offset) const {
    return divider_.divides(offset);
  }
  [[nodiscard]] std::uint32_t index_of(std::uint32_t offset) const {
    return divider_.quotient(offset);
  }

 private:
  // Calls f(word, mask) for the words of the bitmap that blocks [first, first + count) fall in (a
  // run straddles two at most), mask their bits in it.
  template <class F>
  static void for_each_run_word(SpanBitmap bitmap, std::uint32_t first, std::uint32_t count, F f) {
    for (std::uint32_t index = first, end = first + count; index < end;) {
      const std::uint32_t bits = std::min(end - index, 64 - index % 64);
      const std::uint64_t ones = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
      f(bitmap[index / 64], ones << (index % 64));
      index += bits;
    }
  }

  std::uint32_t block_size_ = 0;
  std::uint32_t block_count_ = 0;
  std::uint32_t initialised_ = 0;  // the bump index
  std::uint32_t given_back_ = 0;   // bits set in the bitmap
  std::uint32_t lowest_word_ = 0;  // no bit is set in the words below it
  detail::BlockDivider divider_;
};

}  // namespace poolalloc::internal
