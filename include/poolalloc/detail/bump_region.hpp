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
        top_(memory_),
        end_(memory_ + capacity) {}

  // Over the caller's memory, which it never frees; a null buffer holds nothing.
  BumpRegion(void* buffer, std::size_t bytes)
      : memory_(static_cast<std::byte*>(buffer)),
        top_(memory_),
        end_(buffer == nullptr ? nullptr : memory_ + bytes) {}

  // nullptr when the alignment is not a power of two or the request does not fit; the
  // arithmetic is done on the room left, so no size or alignment can overflow it.
  // The whole path is a dozen instructions (g++ -O2, x86-64): two compares of the alignment,
  // the padding (a negate and a mask), two compares against the room, the new top. The peak
  // is not kept here but when memory is given back (see peak()).
  [[nodiscard]] void* allocate(std::size_t size,
                               std::size_t alignment = alignof(std::max_align_t)) {
    if (!is_valid_alignment(alignment)) return nullptr;
    const std::size_t padding = padding_to_align(top_, alignment);
    const auto room = static_cast<std::size_t>(end_ - top_);
    if (padding > room || size > room - padding) return nullptr;
    std::byte* const block = top_ + padding;
    top_ = block + size;
    return block;
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

  // Gives back everything allocated after the first `used` bytes. The bytes in use only grow
  // between two rewinds, so the peak taken here, and in peak() for the current run, is the
  // most ever in use at once.
  void rewind(std::size_t used) {
    peak_ = peak();
    top_ = memory_ + used;
  }

  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  [[nodiscard]] std::size_t used() const { return static_cast<std::size_t>(top_ - memory_); }
  [[nodiscard]] std::size_t peak() const { return std::max(peak_, used()); }
  [[nodiscard]] std::size_t capacity() const { return static_cast<std::size_t>(end_ - memory_); }

 protected:
  // `FrameAllocator "scratch": 300 of 65536 B used, peak 1200 B`
  std::ostream& print(std::ostream& out, std::string_view kind) const {
    return write_title(out, kind, name(), this)
           << ": " << used() << " of " << capacity() << " B used, peak " << peak() << " B";
  }

 private:
  std::unique_ptr<std::byte[]> owned_;  // null over caller memory
  std::byte* memory_;
  std::byte* top_;  // the next byte to hand out
  std::byte* end_;
  std::size_t peak_ = 0;  // the most bytes in use at once before the last rewind
  Name name_;
};

}  // namespace poolalloc::detail
