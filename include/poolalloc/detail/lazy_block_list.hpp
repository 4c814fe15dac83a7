// The pool of Kenwright's "Fast Efficient Fixed-Size Memory Pool" over one contiguous run of
// equally sized blocks: the toolkit's FixedPool chains these. (The drop-in malloc carves its
// spans with the same bump index, but keeps their returned blocks in a bitmap apart from them.)
//
// - Lazy initialisation: never-used blocks are handed out by a bump index, so creating the list
//   touches no block and costs the same for 1 K blocks as for 10 M.
// - No loops: allocate and deallocate are a few loads and stores.
// - Index links: a free block holds the 4-byte index of the next free block on its list (below),
//   so blocks need only 4 bytes and the list cannot point outside its run. The index is kept in
//   bytes (the next block's offset from the run's start), so that following a link is an add,
//   with no multiply in the chain of dependent loads that a random free order makes of
//   consecutive allocations, and a deallocate needs no division.
// - Interleaved lists: the free blocks are one stack, last in first out, kept as kLists lists, the
//   k-th block from the stack's bottom on list k mod kLists. An allocation loads the link of the
//   block it takes, and the next allocation takes the head of another list, known already: the
//   link is needed only kLists allocations later. Under a random free order each link load
//   misses the cache, and one list makes consecutive allocations wait for each miss in turn (the
//   paper's pool's limit, and Boost.Pool's); kLists lists keep kLists misses in flight.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace poolalloc::detail {

// Exact division and divisibility by a 32-bit constant with one multiplication
// (Lemire, Kaser, Kurz: "Faster remainder by direct computation", 2019). Valid for every
// 32-bit numerator, which is all a run of at most 4 GiB needs.
class BlockDivider {
 public:
  constexpr BlockDivider() = default;
  constexpr explicit BlockDivider(std::uint32_t divisor) : magic_(UINT64_MAX / divisor + 1) {}

  // The high 64 bits of the 96-bit product magic * n, from two 32x32-bit products in standard
  // C++ (no 128-bit type): magic = high * 2^32 + low, and the carry of low * n into the high half
  // is its upper 32 bits. high * n plus that carry stays below 2^64.
  [[nodiscard]] constexpr std::uint32_t quotient(std::uint32_t n) const {
    const std::uint64_t carry = (magic_ & UINT32_MAX) * n >> 32;
    return static_cast<std::uint32_t>(((magic_ >> 32) * n + carry) >> 32);
  }
  [[nodiscard]] constexpr bool divides(std::uint32_t n) const { return product(n) <= magic_ - 1; }

  // n times the magic number, modulo 2^64: k * (divisor * magic mod 2^64) for n = k * divisor,
  // and at least the magic number for every other n. The product of a multiple so grows with
  // it, and `product(n) <= product(last)` holds exactly for the multiples 0 .. last (as long as
  // product(last) stays below the magic number, as it does for any n of 32 bits): one multiply
  // and one compare check that n is a multiple and not past `last`.
  [[nodiscard]] constexpr std::uint64_t product(std::uint32_t n) const { return n * magic_; }
  [[nodiscard]] constexpr std::uint64_t magic() const { return magic_; }

 private:
  std::uint64_t magic_ = 0;
};

class LazyBlockList {
 public:
  static constexpr std::uint32_t kNoBlock = UINT32_MAX;  // no block starts at this offset
  static constexpr std::size_t kMinBlockSize = sizeof(std::uint32_t);
  // A power of two. Each list adds 4 bytes of heads; in the churn of bench/toolkit_anchors.cpp
  // (10,000 x 64 B freed in random order), 1 list took 13.4 ns a pair, 4 8.1 to 8.5, 8 7.6 to
  // 7.9, and 16 no less.
  static constexpr std::uint32_t kLists = 8;

  constexpr LazyBlockList() = default;

  // block_size >= kMinBlockSize; block_size * block_count must fit in 32 bits.
  LazyBlockList(void* base, std::uint32_t block_size, std::uint32_t block_count)
      : base_(static_cast<std::byte*>(base)),
        block_size_(block_size),
        block_count_(block_count),
        bytes_(block_size * block_count),
        divider_(block_size),
        odd_inverse_(inverse_of_odd(block_size >> std::countr_zero(block_size))),
        twos_(std::countr_zero(block_size)) {}

  // O(1): the block freed last (the head of its list), else the next never-used block, else
  // nullptr. Two stores: the list's head, the count.
  [[nodiscard]] void* allocate() {
    const std::uint32_t listed = listed_;
    if (listed != 0) {
      std::uint32_t& head = heads_[(listed - 1) % kLists];
      std::byte* block = base_ + head;
      std::memcpy(&head, block, sizeof head);
      listed_ = listed - 1;
      return block;
    }
    if (initialised_ < block_count_) return block_at(initialised_++);
    return nullptr;
  }

  // O(1): three stores (the link, the list's head, the count). The caller has checked
  // holds_block() where that matters.
  void deallocate(void* block) {
    const std::uint32_t listed = listed_;
    std::uint32_t& head = heads_[listed % kLists];
    std::memcpy(block, &head, sizeof head);
    head = offset_of(block);
    listed_ = listed + 1;
  }

  // The paper's resizing: the memory right after the last block joins the list. O(1), because
  // the new blocks become never-used ones. block_size * block_count must still fit in 32 bits.
  void extend(std::uint32_t extra_blocks) {
    block_count_ += extra_blocks;
    bytes_ = block_size_ * block_count_;
  }

  // Whether a block of the run starts at p, for any pointer: one multiply, a rotate and a compare
  // (Granlund and Montgomery's test of divisibility). The distance from the base times the
  // inverse of the block size's odd factor, rotated right by the factor's power of two, is the
  // block's index where the distance is a multiple of the block size, and at least
  // 2^64 / block size (more than a run holds) where it is not.
  [[nodiscard]] bool holds_block(const void* p) const {
    const std::uint64_t distance =
        reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(base_);
    return std::rotr(distance * odd_inverse_, twos_) < block_count_;
  }
  [[nodiscard]] bool contains(const void* p) const {
    return static_cast<std::size_t>(static_cast<const std::byte*>(p) - base_) < bytes_;
  }
  [[nodiscard]] std::uint32_t index_of(const void* block) const {
    return divider_.quotient(offset_of(block));
  }
  [[nodiscard]] std::byte* block_at(std::uint32_t index) const {
    return base_ + std::size_t{index} * block_size_;
  }

  // Walks the free lists and checks that every link is the start of a handed-out block and that
  // each list ends (kNoBlock) after as many blocks as the count puts on it. O(free blocks): for
  // verification only.
  [[nodiscard]] bool free_list_is_consistent() const {
    const std::size_t handed_out_bytes = std::size_t{block_size_} * initialised_;
    if (listed_ > initialised_) return false;
    for (std::uint32_t list = 0; list < kLists; ++list) {
      std::uint32_t offset = heads_[list];
      for (std::uint32_t k = list; k < listed_; k += kLists) {  // the stack's k-th block
        if (offset >= handed_out_bytes || !holds_block(base_ + offset)) return false;
        std::memcpy(&offset, base_ + offset, sizeof offset);
      }
      if (offset != kNoBlock) return false;
    }
    return true;
  }

  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] std::uint32_t block_size() const { return block_size_; }
  [[nodiscard]] std::uint32_t block_count() const { return block_count_; }
  [[nodiscard]] std::uint32_t free_count() const { return block_count_ - used_count(); }
  [[nodiscard]] std::uint32_t used_count() const { return initialised_ - listed_; }
  [[nodiscard]] bool full() const { return used_count() == block_count_; }
  [[nodiscard]] bool empty() const { return used_count() == 0; }

 private:
  // x such that x * odd = 1 modulo 2^64: odd * odd = 1 modulo 8, and each Newton step doubles
  // the number of correct low bits (3, 6, 12, 24, 48, 96).
  static constexpr std::uint64_t inverse_of_odd(std::uint64_t odd) {
    std::uint64_t inverse = odd;
    for (int step = 0; step < 5; ++step) inverse *= 2 - odd * inverse;
    return inverse;
  }

  static constexpr std::array<std::uint32_t, kLists> unlinked() {
    std::array<std::uint32_t, kLists> heads{};
    heads.fill(kNoBlock);
    return heads;
  }

  [[nodiscard]] std::uint32_t offset_of(const void* p) const {
    return static_cast<std::uint32_t>(static_cast<const std::byte*>(p) - base_);
  }

  std::byte* base_ = nullptr;
  std::uint32_t block_size_ = 0;
  std::uint32_t block_count_ = 0;
  std::uint32_t bytes_ = 0;        // block_size_ * block_count_
  std::uint32_t initialised_ = 0;  // blocks [0, initialised_) have been handed out at least once
  std::uint32_t listed_ = 0;       // blocks on the free lists, of those
  BlockDivider divider_;
  std::uint64_t odd_inverse_ = 0;  // of the block size's odd factor
  int twos_ = 0;                   // the block size's power-of-two factor, as an exponent
  // The offset of each list's first block; a list's last block links to kNoBlock.
  std::array<std::uint32_t, kLists> heads_ = unlinked();
};

}  // namespace poolalloc::detail
