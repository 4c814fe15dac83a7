// One run of bytes handed out front to back, owned or the caller's: the common core of
// FrameAllocator and StackAllocator, which differ only in how they give memory back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <ostream>
#include <string_view>
#include <utility>

#include "align.hpp"
#include "name.hpp"
#include "printing.hpp"

namespace poolalloc::detail {

class BumpRegion {
 public:
  explicit BumpRegion(std::size_t capacity)
      : owned_(std::make_unique_for_overwrite<std::byte[]>(capacity)),
        memory_(owned_.get()),
        capacity_(capacity) {}

  // Over the caller's memory, which it never frees; a null buffer holds nothing.
  BumpRegion(void* buffer, std::size_t bytes)
      : memory_(static_cast<std::byte*>(buffer)), capacity_(buffer == nullptr ? 0 : bytes) {}

  // nullptr when the alignment is not a power of two or the request does not fit; the
  // arithmetic is done on the room left, so no size or alignment can overflow it.
  [[nodiscard]] void* allocate(std::size_t size,
                               std::size_t alignment = alignof(std::max_align_t)) {
    if (!is_valid_alignment(alignment)) return nullptr;
    std::byte* top = memory_ + used_;
    const std::size_t padding = padding_to_align(top, alignment);
    const std::size_t room = capacity_ - used_;
    if (padding > room || size > room - padding) return nullptr;
    used_ += padding + size;
    peak_ = std::max(peak_, used_);
    return top + padding;
  }

  // A T constructed in place; nullptr when it does not fit. Giving the memory back runs no
  // destructor: meant for trivially destructible types, or call ~T() yourself. If T's
  // constructor throws, its memory stays used until the memory is given back.
  template <class T, class... Args>
  [[nodiscard]] T* new_object(Args&&... args) {
    void* memory = allocate(sizeof(T), alignof(T));
    return memory == nullptr ? nullptr : ::new (memory) T(std::forward<Args>(args)...);
  }

  // n default-initialised Ts, as new T[n] makes them; nullptr when they do not fit.
  template <class T>
  [[nodiscard]] T* new_array(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) return nullptr;
    auto* array = static_cast<T*>(allocate(n * sizeof(T), alignof(T)));
    if (array != nullptr) std::uninitialized_default_construct_n(array, n);
    return array;
  }

  // Gives back everything allocated after the first `used` bytes.
  void rewind(std::size_t used) { used_ = used; }

  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  [[nodiscard]] std::size_t used() const { return used_; }
  [[nodiscard]] std::size_t peak() const { return peak_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 protected:
  // `FrameAllocator "scratch": 300 of 65536 B used, peak 1200 B`
  std::ostream& print(std::ostream& out, std::string_view kind) const {
    return write_title(out, kind, name(), this)
           << ": " << used_ << " of " << capacity_ << " B used, peak " << peak_ << " B";
  }

 private:
  std::unique_ptr<std::byte[]> owned_;  // null over caller memory
  std::byte* memory_;
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::size_t peak_ = 0;  // the most bytes ever in use at once
  Name name_;
};

}  // namespace poolalloc::detail
