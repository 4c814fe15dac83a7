// Frame allocators: bump allocation for data that lives until the end of a frame.
//
// FrameAllocator hands out memory front to back and gives all of it back at once with reset().
// DoubleBufferedFrameAllocator keeps two of them, so memory allocated during one frame stays
// valid through the next (for data handed from one frame to the one after it).
// allocate() is O(1) and returns nullptr when the frame is full, whatever the size or alignment.
// Not thread-safe, by choice: use one per thread.
#pragma once

#include <algorithm>
#include <cstddef>

#include "detail/bump_region.hpp"

namespace poolalloc {

class FrameAllocator {
 public:
  explicit FrameAllocator(std::size_t capacity_bytes) : region_(capacity_bytes) {}

  // nullptr when the request does not fit or the alignment is not a power of two.
  [[nodiscard]] void* allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
    return region_.allocate(size, align);
  }
  void reset() { region_.rewind(0); }

  [[nodiscard]] std::size_t used() const { return region_.used(); }
  [[nodiscard]] std::size_t peak() const { return region_.peak(); }
  [[nodiscard]] std::size_t capacity() const { return region_.capacity(); }

 private:
  detail::BumpRegion region_;
};

class DoubleBufferedFrameAllocator {
 public:
  explicit DoubleBufferedFrameAllocator(std::size_t bytes_per_frame)
      : frames_{FrameAllocator(bytes_per_frame), FrameAllocator(bytes_per_frame)} {}

  [[nodiscard]] void* allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
    return current().allocate(size, align);
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

 private:
  FrameAllocator& current() { return frames_[current_]; }

  FrameAllocator frames_[2];
  unsigned current_ = 0;
};

}  // namespace poolalloc
