// Where a FixedPool puts each block's payload and, with debug checks, its guard bytes:
//
//   [front guard][payload][back guard] [front guard][payload][back guard] ...
//   <------------- stride ------------>
//
// The front guard is a multiple of the alignment, so every payload is aligned; the back guard
// takes whatever the stride's rounding leaves, so every byte between payloads is checked.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>

#include "align.hpp"
#include "lazy_block_list.hpp"

namespace poolalloc::detail {

inline constexpr std::size_t kMinGuardBytes = 16;

struct BlockLayout {
  std::size_t payload = 0;      // the block size the caller asked for, at least 4 bytes
  std::size_t front_guard = 0;  // 0 without debug checks
  std::size_t stride = 0;       // distance from one payload to the next

  [[nodiscard]] std::size_t back_guard() const { return stride - front_guard - payload; }
};

// nullopt for a zero block size, an alignment that is not a power of two, or sizes that overflow.
[[nodiscard]] inline std::optional<BlockLayout> block_layout(std::size_t block_size,
                                                             std::size_t alignment, bool guards) {
  if (block_size == 0 || !is_valid_alignment(alignment)) return std::nullopt;
  BlockLayout layout;
  layout.payload = std::max(block_size, LazyBlockList::kMinBlockSize);
  std::size_t back_guard = 0;
  if (guards) {
    const auto front = round_up(kMinGuardBytes, alignment);
    if (!front) return std::nullopt;
    layout.front_guard = *front;
    back_guard = kMinGuardBytes;
  }
  const std::size_t headroom = layout.front_guard + back_guard;
  if (layout.payload > SIZE_MAX - headroom) return std::nullopt;
  const auto stride = round_up(layout.payload + headroom, alignment);
  if (!stride) return std::nullopt;
  layout.stride = *stride;
  return layout;
}

}  // namespace poolalloc::detail
