#include "stack_capture.hpp"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <algorithm>
#include <iterator>

namespace poolalloc::internal {

std::uint32_t capture_stack(const void** frames, const void* first) {
  // Room for the allocator's own few frames, which go.
  constexpr int kSkippable = 8;
  void* raw[kMostFrames + kSkippable];
  const int count = unw_backtrace(raw, static_cast<int>(std::size(raw)));
  int start = 0;
  if (first != nullptr) {
    const auto found = std::find(raw, raw + std::max(count, 0), first);
    if (found != raw + std::max(count, 0)) start = static_cast<int>(found - raw);
  }
  const int kept = std::min(std::max(count - start, 0), static_cast<int>(kMostFrames));
  std::copy_n(raw + start, kept, frames);
  return static_cast<std::uint32_t>(kept);
}

}  // namespace poolalloc::internal
