// Dense numbers for distinct values, handed out in the order the values are first seen: a
// profile's string table (strings numbered from 0) and its location ids (addresses numbered
// from 1, as 0 means none in a profile). Open addressing with linear probing in OS-mapped memory
// (scratch_array.hpp), doubled when half full; nothing is ever removed. An insertion that finds
// no memory to grow into returns false and changes nothing. Not thread-safe: each writer has
// its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scratch_array.hpp"

namespace poolalloc::internal {

struct Numbered {
  std::uint64_t number = 0;
  bool added = false;  // first seen now
};

// Strings numbered from 0. Each is copied in, so the caller's may go away.
class StringTable {
 public:
  bool find_or_add(std::string_view text, Numbered& result);
  [[nodiscard]] std::uint64_t size() const { return count_; }

 private:
  struct Slot {
    std::uint64_t text_hash;
    std::uint64_t number_plus_one;  // 0: an empty slot
    std::uint32_t offset;           // of the string in text_
    std::uint32_t length;
    [[nodiscard]] bool used() const { return number_plus_one != 0; }
    [[nodiscard]] std::uint64_t hash() const { return text_hash; }
  };
  [[nodiscard]] bool holds(const Slot& slot, std::uint64_t hash, std::string_view text) const;

  ScratchArray<char> text_;  // every string once, back to back
  ScratchArray<Slot> slots_;
  std::uint64_t count_ = 0;
};

// 64-bit keys (any value) numbered from 1.
class IdTable {
 public:
  bool find_or_add(std::uint64_t key, Numbered& result);
  [[nodiscard]] std::uint64_t size() const { return count_; }

 private:
  struct Slot {
    std::uint64_t key;
    std::uint64_t number;  // 0: an empty slot
    [[nodiscard]] bool used() const { return number != 0; }
    [[nodiscard]] std::uint64_t hash() const { return mix_bits(key); }
  };

  ScratchArray<Slot> slots_;
  std::uint64_t count_ = 0;
};

}  // namespace poolalloc::internal
