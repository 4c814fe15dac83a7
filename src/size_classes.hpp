// Size classes: every pooled request is rounded up to one of 72 block sizes, all multiples of
// 16 (so every block is 16-byte aligned, as glibc promises): 16, 32, ... 128 in steps of 16,
// then eight classes per doubling up to 32 KiB, which keeps internal waste under 12.5 % above
// 128 bytes (and under 16 bytes below). Every power of two is a class.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

inline constexpr std::size_t kMinAlignment = 16;
inline constexpr std::size_t kLargestClassSize = std::size_t{32} << 10;
inline constexpr unsigned kClassesPerDoubling = 8;
inline constexpr unsigned kClassCount = 8 + 8 * kClassesPerDoubling;

// Block size of class `cls`: the inverse of class_of().
constexpr std::uint32_t class_size(unsigned cls) {
  if (cls < 8) return (cls + 1) * 16;
  // The class lies in (2^doubling, 2^(doubling+1)], in steps of 2^doubling / 8.
  const unsigned doubling = (cls - 8) / kClassesPerDoubling + 7;
  return (1u << doubling) + ((cls - 8) % kClassesPerDoubling + 1) * (1u << (doubling - 3));
}

// Class of a request of 129 .. kLargestClassSize bytes, in closed form: the position of the
// highest bit picks the doubling, the next three bits the eighth within it. Builds the table.
constexpr unsigned class_of_medium(std::size_t size) {
  const unsigned doubling = std::bit_width(size - 1) - 1;
  return 8 + (doubling - 7) * kClassesPerDoubling + (((size - 1) >> (doubling - 3)) & 7);
}

// Class of every request size, in 16-byte steps: one byte per step, 2 KiB in all.
inline constexpr auto kClassOfSize = [] {
  std::array<std::uint8_t, kLargestClassSize / 16 + 1> table{};
  for (std::size_t i = 1; i < table.size(); ++i)
    table[i] = static_cast<std::uint8_t>(i <= 8 ? i - 1 : class_of_medium(i * 16));
  return table;
}();

// Class of a request of 0 .. kLargestClassSize bytes: one table load.
inline unsigned class_of(std::size_t size) {
  return kClassOfSize[(size + 15) >> 4];
}

}  // namespace poolalloc::internal
