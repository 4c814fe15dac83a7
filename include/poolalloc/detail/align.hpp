// Alignment arithmetic that reports overflow instead of wrapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace poolalloc::detail {

// Not std::has_single_bit: on the default x86-64 target (no POPCNT) that calls libgcc's
// __popcountdi2, which more than doubled the time of a frame allocation.
[[nodiscard]] constexpr bool is_valid_alignment(std::size_t alignment) {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
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
