// The debug-mode bookkeeping of a FixedPool: one "allocated" bit per block, kept apart from the
// blocks so that a double free cannot be hidden by what the caller wrote into the block, and the
// byte patterns written into and around blocks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace poolalloc::detail {

inline constexpr unsigned char kFreshFill = 0xA5;  // payload of a block just allocated
inline constexpr unsigned char kFreedFill =
    0x5A;  // payload of a freed block, after its 4-byte link
inline constexpr unsigned char kGuardFill = 0xFD;  // guard bytes around every payload

class AllocationBits {
 public:
  void resize(std::size_t blocks) { words_.resize((blocks + 63) / 64); }
  [[nodiscard]] bool test(std::uint32_t index) const {
    return (words_[index / 64] >> (index % 64)) & 1;
  }
  void set(std::uint32_t index) { words_[index / 64] |= std::uint64_t{1} << (index % 64); }
  void clear(std::uint32_t index) { words_[index / 64] &= ~(std::uint64_t{1} << (index % 64)); }

 private:
  std::vector<std::uint64_t> words_;
};

inline void fill(std::byte* begin, std::size_t bytes, unsigned char pattern) {
  std::memset(begin, pattern, bytes);
}

[[nodiscard]] inline bool holds_only(const std::byte* begin, std::size_t bytes,
                                     unsigned char pattern) {
  return std::all_of(begin, begin + bytes,
                     [pattern](std::byte b) { return b == std::byte{pattern}; });
}

}  // namespace poolalloc::detail
