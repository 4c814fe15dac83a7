// A scope counted in a thread-local depth: how many such scopes the calling thread is in. A
// signal handler reads it to learn what the code it interrupted was doing: a section of a lock
// that the handler would wait for (a dump of the heap profile), or an allocation that poolalloc
// makes for itself.
#pragma once

#include <atomic>
#include <cstdint>

namespace poolalloc::internal {

// The signal fences keep the compiler from moving the count past the work of the scope; a
// handler runs on the thread it interrupted, so no other ordering is needed.
class DepthScope {
 public:
  explicit DepthScope(std::uint32_t& depth) : depth_(depth) {
    ++depth_;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~DepthScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    --depth_;
  }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  std::uint32_t& depth_;
};

}  // namespace poolalloc::internal
