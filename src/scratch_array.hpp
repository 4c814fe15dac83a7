// A growable array in memory mapped from the OS (os_map, grown with os_remap): for code that may
// not call malloc, as the profile writer, which runs inside malloc's library, in signal handlers
// and in fork children. A growth that finds no memory says so (false) and leaves the array as it
// was. Elements are trivially copyable: a growth may move them.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "os.hpp"

namespace poolalloc::internal {

template <class T>
class ScratchArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  ScratchArray() = default;
  ScratchArray(const ScratchArray&) = delete;
  ScratchArray& operator=(const ScratchArray&) = delete;
  ~ScratchArray() {
    if (data_ != nullptr) os_unmap(data_, bytes_);
  }

  void swap(ScratchArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(bytes_, other.bytes_);
  }

  // `count` elements: those beyond the old size read as zero bytes if the array never held
  // them, else as they were left.
  bool resize(std::size_t count) {
    if (count > capacity() && !grow(count)) return false;
    size_ = count;
    return true;
  }
  bool push_back(const T& value) {
    if (!resize(size_ + 1)) return false;
    data_[size_ - 1] = value;
    return true;
  }
  // Appends `count` elements from `values`.
  bool append(const T* values, std::size_t count) {
    const std::size_t at = size_;
    if (count > max_size() - at || !resize(at + count)) return false;
    for (std::size_t i = 0; i < count; ++i) data_[at + i] = values[i];
    return true;
  }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] T* data() { return data_; }
  [[nodiscard]] const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  static constexpr std::size_t max_size() { return ~std::size_t{0} / 2 / sizeof(T); }
  [[nodiscard]] std::size_t capacity() const { return bytes_ / sizeof(T); }

  // At least doubles, so that appending n elements one at a time costs O(n).
  bool grow(std::size_t count) {
    if (count > max_size()) return false;
    std::size_t bytes = bytes_ == 0 ? kPageSize : bytes_;
    while (bytes < count * sizeof(T)) bytes *= 2;
    void* memory = data_ == nullptr ? os_map(bytes) : os_remap(data_, bytes_, bytes);
    if (memory == nullptr) return false;
    data_ = static_cast<T*>(memory);
    bytes_ = bytes;
    return true;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;  // mapped: a power of two pages
};

}  // namespace poolalloc::internal
