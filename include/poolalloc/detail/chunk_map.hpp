// Which chunk of a FixedPool holds an address, in O(1) whatever the number of chunks, so that a
// block freed into any chunk is found without a scan.
//
// Memory is cut into granules of 2^shift bytes, and each chunk is entered under every granule
// that its bytes touch, in an open-addressed hash table keyed by the granule's number (linear
// probing, at most half full). A granule may hold the end of one chunk and the start of another:
// both are entered, and a lookup asks the caller which of the chunks entered under its granule
// holds the address. The granule is as large as the first chunk (at least kMinGranule bytes), so
// that a pool that grows by doubling enters each chunk under a few granules and no granule holds
// more than two of its chunks but the smallest first ones.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace poolalloc::detail {

class ChunkMap {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::size_t kMinGranule = 4096;

  // Before the first chunk is entered: granules of about `bytes` (a power of two, at least
  // kMinGranule and at most bytes where bytes is larger).
  void set_granule(std::size_t bytes) {
    shift_ = std::countr_zero(std::bit_floor(bytes < kMinGranule ? kMinGranule : bytes));
  }

  // Makes room for a chunk over [begin, end), so that insert() of it cannot fail. Throws
  // std::bad_alloc, with the map unchanged, without the memory.
  void reserve(const void* begin, const void* end) {
    const std::size_t needed = 2 * (count_ + granules(begin, end));
    if (needed <= table_.size()) return;
    std::vector<Entry> table(std::bit_ceil(needed < 16 ? std::size_t{16} : needed));
    std::swap(table, table_);
    mask_ = table_.size() - 1;
    hash_shift_ = 64 - std::countr_zero(table_.size());
    count_ = 0;
    for (const Entry& entry : table) {
      if (entry.chunk != kNone) place(entry);
    }
  }

  // Enters chunk `chunk` under every granule of [begin, end), after reserve() for it.
  void insert(const void* begin, const void* end, std::uint32_t chunk) {
    for (std::uintptr_t granule = granule_of(begin); granule <= granule_of(last_byte(end));
         ++granule) {
      place({granule, chunk});
    }
  }

  // The chunk entered under p's granule for which holds(chunk) is true; kNone when none is.
  template <class Holds>
  [[nodiscard]] std::uint32_t find(const void* p, Holds&& holds) const {
    if (mask_ == 0) return kNone;  // no table
    const std::uintptr_t granule = granule_of(p);
    for (std::size_t slot = slot_of(granule);; slot = (slot + 1) & mask_) {
      const Entry& entry = table_[slot];
      if (entry.chunk == kNone) return kNone;
      if (entry.granule == granule && holds(entry.chunk)) return entry.chunk;
    }
  }

  // Forgets every chunk and keeps the table's memory: the pool enters its chunks again after
  // removing some. O(table).
  void clear() {
    for (Entry& entry : table_) entry.chunk = kNone;
    count_ = 0;
  }

  // Forgets every chunk and frees the table.
  void release() {
    table_ = {};
    mask_ = count_ = 0;
  }

 private:
  struct Entry {
    std::uintptr_t granule = 0;
    std::uint32_t chunk = kNone;
  };

  static const void* last_byte(const void* end) { return static_cast<const std::byte*>(end) - 1; }
  [[nodiscard]] std::uintptr_t granule_of(const void* p) const {
    return reinterpret_cast<std::uintptr_t>(p) >> shift_;
  }
  [[nodiscard]] std::size_t granules(const void* begin, const void* end) const {
    return granule_of(last_byte(end)) - granule_of(begin) + 1;
  }
  // Fibonacci hashing: the granule times 2^64 / phi, its top bits.
  [[nodiscard]] std::size_t slot_of(std::uintptr_t granule) const {
    return static_cast<std::size_t>((std::uint64_t{granule} * 0x9E3779B97F4A7C15u) >> hash_shift_);
  }
  void place(const Entry& entry) {
    std::size_t slot = slot_of(entry.granule);
    while (table_[slot].chunk != kNone) slot = (slot + 1) & mask_;
    table_[slot] = entry;
    ++count_;
  }

  std::vector<Entry> table_;  // a power of two of entries, or none
  std::size_t mask_ = 0;      // table_.size() - 1, 0 without a table
  int hash_shift_ = 64;       // 64 - log2(table_.size())
  std::size_t count_ = 0;     // entries in use
  int shift_ = 12;
};

}  // namespace poolalloc::detail
