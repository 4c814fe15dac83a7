// Frame allocators: bump allocation for data that lives until the end of a frame.
//
// FrameAllocator hands out memory front to back and gives all of it back at once with reset().
// DoubleBufferedFrameAllocator keeps two of them, so memory allocated during one frame stays
// valid through the next (for data handed from one frame to the one after it).
// allocate(), new_object<T>() and new_array<T>() are O(1) and return nullptr when the frame is
// full, whatever the size or alignment. Over owned memory or the caller's; one whose memory
// cannot be had (a huge capacity) has capacity 0 and allocates nullptr, and nothing throws. A move
// takes the memory along and leaves the source empty. Memory given back is poisoned under
// AddressSanitizer and, with debug checks, filled and checked when handed out again
// (detail/bump_region.hpp).
// Not thread-safe, by choice: use one per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <utility>

#include "detail/bump_region.hpp"

namespace poolalloc {

class FrameAllocator : private detail::BumpRegion {
 public:
  explicit FrameAllocator(std::size_t capacity_bytes, DebugChecks debug = kDefaultDebugChecks)
      : BumpRegion("FrameAllocator", capacity_bytes, debug) {}
  // Over caller memory.
  FrameAllocator(void* buffer, std::size_t bytes, DebugChecks debug = kDefaultDebugChecks)
      : BumpRegion("FrameAllocator", buffer, bytes, debug) {}

  using BumpRegion::allocate;
  using BumpRegion::new_array;
  using BumpRegion::new_object;
  void reset() { rewind(bottom()); }

  using BumpRegion::capacity;
  using BumpRegion::debug_checks;
  using BumpRegion::name;
  using BumpRegion::peak;
  using BumpRegion::set_name;
  using BumpRegion::used;

  friend std::ostream& operator<<(std::ostream& out, const FrameAllocator& frame) {
    return frame.print(out);
  }
};

class DoubleBufferedFrameAllocator {
 public:
  explicit DoubleBufferedFrameAllocator(std::size_t bytes_per_frame,
                                        DebugChecks debug = kDefaultDebugChecks)
      : frames_{FrameAllocator(bytes_per_frame, debug), FrameAllocator(bytes_per_frame, debug)} {
    // Both frames or neither: a frame that could not have its memory empties the other.
    if (frames_[0].capacity() != frames_[1].capacity()) {
      for (FrameAllocator& frame : frames_) frame = FrameAllocator(nullptr, 0, debug);
    }
  }

  [[nodiscard]] void* allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
    return current().allocate(size, align);
  }
  template <class T, class... Args>
  [[nodiscard]] T* new_object(Args&&... args) {
    return current().new_object<T>(std::forward<Args>(args)...);
  }
  template <class T>
  [[nodiscard]] T* new_array(std::size_t n) {
    return current().new_array<T>(n);
  }

  // Names both frames.
  void set_name(const char* name) {
    for (FrameAllocator& frame : frames_) frame.set_name(name);
  }

  // Starts a new frame in the buffer of the frame before last; the frame that just ended keeps
  // its memory until the next swap.
  void swap_buffers() {
    current_ ^= 1;
    current().reset();
  }

  // Of the current frame.
  [[nodiscard]] std::size_t used() const { return frames_[current_].used(); }
  [[nodiscard]] std::size_t peak() const { return std::max(frames_[0].peak(), frames_[1].peak()); }
  [[nodiscard]] std::size_t capacity() const { return frames_[current_].capacity(); }
  [[nodiscard]] bool debug_checks() const { return frames_[0].debug_checks(); }

  // `DoubleBufferedFrameAllocator, current frame: FrameAllocator "draw list": 100 of 1024 B ...`
  friend std::ostream& operator<<(std::ostream& out, const DoubleBufferedFrameAllocator& frames) {
    return detail::write_line(out, [&frames](std::ostream& line) {
      line << "DoubleBufferedFrameAllocator, current frame: " << frames.frames_[frames.current_];
    });
  }

 private:
  FrameAllocator& current() { return frames_[current_]; }

  FrameAllocator frames_[2];
  unsigned current_ = 0;
};

}  // namespace poolalloc
