// The name an allocator carries for its reports and printing (set_name), kept in a fixed buffer
// so that a report can be written where nothing may allocate.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace poolalloc::detail {

class Name {
 public:
  static constexpr std::size_t kMaxLength = 31;

  // Copies up to kMaxLength characters; nullptr or "" clears the name.
  void set(const char* name) {
    const std::string_view text = name == nullptr ? std::string_view() : std::string_view(name);
    length_ = std::min(text.size(), kMaxLength);
    std::copy_n(text.data(), length_, text_);
    text_[length_] = '\0';
  }

  [[nodiscard]] std::string_view view() const { return {text_, length_}; }
  [[nodiscard]] const char* c_str() const { return text_; }

 private:
  char text_[kMaxLength + 1] = {};
  std::size_t length_ = 0;
};

}  // namespace poolalloc::detail
