// The pool of Kenwright's "Fast Efficient Fixed-Size Memory Pool" over one contiguous run of
// equally sized blocks: the toolkit's FixedPool chains these. (The drop-in malloc carves its
// spans with the same bump index, but keeps their returned blocks in a bitmap apart from them.)
//
// - Lazy initialisation: never-used blocks are handed out by a bump index, so creating the list
//   touches no block and costs the same for 1 K blocks as for 10 M.
// - No loops: allocate and deallocate are a few loads and stores.
// - Index links: a free block holds the 4-byte index of the next free block, so blocks need only
//   4 bytes and the list cannot point outside its run. The index is kept in bytes (the next
//   block's offset from the run's start), so that following a link is an add, with no multiply
//   in the chain of dependent loads that a random free order makes of consecutive allocations,
//   and a deallocate needs no division.
#pragma once

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

  constexpr LazyBlockList() = default;

  // block_size >= kMinBlockSize; block_size * block_count must fit in 32 bits.
  LazyBlockList(void* base, std::uint32_t block_size, std::uint32_t block_count)
      : base_(static_cast<std::byte*>(base)),
        block_size_(block_size),
        block_count_(block_count),
        bytes_(block_size * block_count),
        free_count_(block_count),
        divider_(block_size),
        odd_inverse_(inverse_of_odd(block_size >> std::countr_zero(block_size))),
        twos_(std::countr_zero(block_size)) {}

  // O(1): the head of the free list, else the next never-used block, else nullptr.
  [[nodiscard]] void* allocate() {
    if (free_head_ != kNoBlock) {
      std::byte* block = base_ + free_head_;
      std::memcpy(&free_head_, block, sizeof free_head_);
      --free_count_;
      return block;
    }
    if (initialised_ < block_count_) {
      --free_count_;
      return block_at(initialised_++);
    }
    return nullptr;
  }

  // O(1). The caller has checked contains() and on_block_boundary() where that matters.
  void deallocate(void* block) {
    std::memcpy(block, &free_head_, sizeof free_head_);
    free_head_ = offset_of(block);
    ++free_count_;
  }

  // The paper's resizing: the memory right after the last block joins the list. O(1), because
  // the new blocks become never-used ones. block_size * block_count must still fit in 32 bits.
  void extend(std::uint32_t extra_blocks) {
    block_count_ += extra_blocks;
    bytes_ = block_size_ * block_count_;
    free_count_ += extra_blocks;
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
  // Only meaningful for a pointer that contains() accepted.
  [[nodiscard]] bool on_block_boundary(const void* p) const {
    return is_block_offset(offset_of(p));
  }
  // Whether `offset` bytes from base() is where a block starts; only meaningful below
  // block_size() * block_count().
  [[nodiscard]] bool is_block_offset(std::uint32_t offset) const {
    return divider_.divides(offset);
  }
  [[nodiscard]] std::uint32_t index_of(const void* block) const {
    return divider_.quotient(offset_of(block));
  }
  [[nodiscard]] std::byte* block_at(std::uint32_t index) const {
    return base_ + std::size_t{index} * block_size_;
  }

  // Walks the free list and checks that every link is the start of a handed-out block and that
  // the list has as many entries as the counters say. O(free blocks): for verification only.
  [[nodiscard]] bool free_list_is_consistent() const {
    const std::size_t handed_out_bytes = std::size_t{block_size_} * initialised_;
    std::uint32_t listed = 0;
    for (std::uint32_t offset = free_head_; offset != kNoBlock; ++listed) {
      if (offset >= handed_out_bytes || !is_block_offset(offset) || listed > initialised_) {
        return false;
      }
      std::memcpy(&offset, base_ + offset, sizeof offset);
    }
    return listed == free_count_ - (block_count_ - initialised_);
  }

  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] std::uint32_t block_size() const { return block_size_; }
  [[nodiscard]] std::uint32_t block_count() const { return block_count_; }
  [[nodiscard]] std::uint32_t free_count() const { return free_count_; }
  [[nodiscard]] std::uint32_t used_count() const { return block_count_ - free_count_; }
  [[nodiscard]] bool full() const { return free_count_ == 0; }
  [[nodiscard]] bool empty() const { return free_count_ == block_count_; }

 private:
  // x such that x * odd = 1 modulo 2^64: odd * odd = 1 modulo 8, and each Newton step doubles
  // the number of correct low bits (3, 6, 12, 24, 48, 96).
  static constexpr std::uint64_t inverse_of_odd(std::uint64_t odd) {
    std::uint64_t inverse = odd;
    for (int step = 0; step < 5; ++step) inverse *= 2 - odd * inverse;
    return inverse;
  }

  [[nodiscard]] std::uint32_t offset_of(const void* p) const {
    return static_cast<std::uint32_t>(static_cast<const std::byte*>(p) - base_);
  }

  std::byte* base_ = nullptr;
  std::uint32_t block_size_ = 0;
  std::uint32_t block_count_ = 0;
  std::uint32_t bytes_ = 0;        // block_size_ * block_count_
  std::uint32_t initialised_ = 0;  // blocks [0, initialised_) have been handed out at least once
  std::uint32_t free_count_ = 0;   // never-used blocks plus the free list's length
  BlockDivider divider_;
  std::uint64_t odd_inverse_ = 0;  // of the block size's odd factor
  int twos_ = 0;                   // the block size's power-of-two factor, as an exponent
  // Kept away from free_count_: stored next to it, GCC merges the two stores into one 8-byte
  // vector store, and the next allocate's 4-byte load of free_head_ then waits for it to retire
  // (about 20% of a FixedPool allocate+free pair).
  std::uint32_t free_head_ = kNoBlock;  // the offset of the first free block
};

}  // namespace poolalloc::detail
