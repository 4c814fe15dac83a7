// A one-line message built in a fixed buffer and written to stderr through error_output.hpp:
// usable where nothing may allocate (inside malloc, before main, in a dying process).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "error_output.hpp"

namespace poolalloc::detail {

class Message {
 public:
  // The longest text a message holds: what goes past it is dropped.
  static constexpr std::size_t kCapacity = 512;

  Message& operator<<(std::string_view text) {
    for (char c : text) put(c);
    return *this;
  }
  // Without this, a string literal would pick the const void* overload below.
  Message& operator<<(const char* text) { return *this << std::string_view(text); }
  Message& operator<<(const void* p) { return hex(reinterpret_cast<std::uintptr_t>(p)); }
  Message& operator<<(std::uint64_t n) {
    char digits[20];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (count > 0) put(digits[--count]);
    return *this;
  }
  Message& operator<<(std::uint32_t n) { return *this << std::uint64_t{n}; }
  Message& operator<<(int n) {
    if (n < 0) put('-');
    return *this << static_cast<std::uint64_t>(n < 0 ? -static_cast<std::int64_t>(n) : n);
  }
  Message& hex(std::uint64_t n) {
    *this << "0x";
    int shift = 60;
    while (shift > 0 && ((n >> shift) & 0xf) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) put("0123456789abcdef"[(n >> shift) & 0xf]);
    return *this;
  }
  // Right-aligns what `write` appends in a field of `width` characters (for tables).
  template <class Write>
  Message& padded(int width, Write write) {
    const std::size_t start = length_;
    write(*this);
    const std::size_t written = length_ - start;
    if (written < static_cast<std::size_t>(width) && length_ + (width - written) <= kCapacity) {
      const std::size_t pad = width - written;
      for (std::size_t i = length_; i-- > start;) buffer_[i + pad] = buffer_[i];
      for (std::size_t i = 0; i < pad; ++i) buffer_[start + i] = ' ';
      length_ += pad;
    }
    return *this;
  }

  [[nodiscard]] std::string_view text() const { return {buffer_, length_}; }

  void write_to_stderr() const { detail::write_to_stderr(text()); }

 private:
  void put(char c) {
    if (length_ < kCapacity) buffer_[length_++] = c;
  }
  char buffer_[kCapacity];
  std::size_t length_ = 0;
};

// A character of text that came from outside (a name, a path) as a report shows it: a control
// character as '?', so that a line stays one line and sends a terminal nothing.
constexpr char shown_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f ? '?' : c;
}

// Misuse that would otherwise corrupt memory: say what and where on stderr, then abort.
[[noreturn]] inline void fatal(Message& message) {
  const NoCancellation whole_report;  // the report, then abort: never a cancelled thread
  message << "\n";
  message.write_to_stderr();
  std::abort();
}

}  // namespace poolalloc::detail
