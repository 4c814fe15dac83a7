#include "stack_capture.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <iterator>

namespace poolalloc::internal {
namespace {

using Backtrace = int (*)(void** frames, int most);
constinit std::atomic<Backtrace> g_backtrace{nullptr};

}  // namespace

bool load_stack_unwinder() {
  if (g_backtrace.load(std::memory_order_acquire) != nullptr) return true;
  void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  auto* backtrace = reinterpret_cast<Backtrace>(dlsym(library, "unw_backtrace"));
  g_backtrace.store(backtrace, std::memory_order_release);
  return backtrace != nullptr;
}

std::uint32_t capture_stack(const void** frames, const void* first) {
  const Backtrace backtrace = g_backtrace.load(std::memory_order_acquire);
  if (backtrace == nullptr) {
    frames[0] = first;
    return first != nullptr ? 1 : 0;
  }
  // Room for the allocator's own few frames, which go.
  constexpr int kSkippable = 8;
  void* raw[kMostFrames + kSkippable];
  const int count = std::max(backtrace(raw, static_cast<int>(std::size(raw))), 0);
  int start = 0;
  if (first != nullptr) {
    const auto found = std::find(raw, raw + count, first);
    if (found != raw + count) start = static_cast<int>(found - raw);
  }
  const int kept = std::min(count - start, static_cast<int>(kMostFrames));
  std::copy_n(raw + start, kept, frames);
  return static_cast<std::uint32_t>(kept);
}

}  // namespace poolalloc::internal
