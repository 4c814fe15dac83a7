// Alignment arithmetic that reports overflow instead of wrapping.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace poolalloc::detail {

[[nodiscard]] constexpr bool is_valid_alignment(std::size_t alignment) {
  return std::has_single_bit(alignment);
}

// n rounded up to a multiple of the power of two `alignment`; nullopt when that overflows.
[[nodiscard]] constexpr std::optional<std::size_t> round_up(std::size_t n, std::size_t alignment) {
  const std::size_t mask = alignment - 1;
  if (n > SIZE_MAX - mask) return std::nullopt;
  return (n + mask) & ~mask;
}

// Bytes to skip from `address` to the next multiple of the power of two `alignment`. Never
// overflows, whatever the alignment.
[[nodiscard]] inline std::size_t padding_to_align(const void* address, std::size_t alignment) {
  return static_cast<std::size_t>(-reinterpret_cast<std::uintptr_t>(address)) & (alignment - 1);
}

}  // namespace poolalloc::detail
