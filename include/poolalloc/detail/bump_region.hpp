// One owned run of bytes handed out front to back: the common core of FrameAllocator and
// StackAllocator, which differ only in how they give memory back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "align.hpp"

namespace poolalloc::detail {

class BumpRegion {
 public:
  explicit BumpRegion(std::size_t capacity)
      : memory_(std::make_unique_for_overwrite<std::byte[]>(capacity)), capacity_(capacity) {}

  // nullptr when the alignment is not a power of two or the request does not fit; the
  // arithmetic is done on the room left, so no size or alignment can overflow it.
  [[nodiscard]] void* allocate(std::size_t size, std::size_t alignment) {
    if (!is_valid_alignment(alignment)) return nullptr;
    std::byte* top = memory_.get() + used_;
    const std::size_t padding = padding_to_align(top, alignment);
    const std::size_t room = capacity_ - used_;
    if (padding > room || size > room - padding) return nullptr;
    used_ += padding + size;
    peak_ = std::max(peak_, used_);
    return top + padding;
  }

  // Gives back everything allocated after the first `used` bytes.
  void rewind(std::size_t used) { used_ = used; }

  [[nodiscard]] std::size_t used() const { return used_; }
  [[nodiscard]] std::size_t peak() const { return peak_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<std::byte[]> memory_;
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::size_t peak_ = 0;  // the most bytes ever in use at once
};

}  // namespace poolalloc::detail
