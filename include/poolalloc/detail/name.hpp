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

  // Copies up to kMaxLength bytes, cut at the last whole UTF-8 character among them (never
  // before a continuation byte, 10xxxxxx); nullptr or "" clears the name.
  void set(const char* name) {
    const std::string_view text(name == nullptr ? "" : name);
    length_ = std::min(text.size(), kMaxLength);
    while (length_ < text.size() && length_ > 0 &&
           (static_cast<unsigned char>(text[length_]) & 0xC0) == 0x80) {
      --length_;
    }
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
