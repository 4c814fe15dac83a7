// How reports show what they print: text that came from outside (a variable's value, a path, a
// command line) cut to a length and with control characters replaced, so that a report stays
// one line; byte counts in B, KiB, MiB, GiB or TiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

// The most characters a figure takes in decimal: UINT64_MAX's 20 digits.
inline constexpr std::size_t kWidestFigure = 20;

// The first `limit` bytes of text or fewer: a UTF-8 character is not split.
inline std::string_view cut_at_character(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return {text.data(), end};
}

// `text` with every control character shown as '?', cut after about `limit` bytes with "..."
// after it.
inline void append_shown(detail::Message& message, std::string_view text, std::size_t limit) {
  const std::string_view shown = cut_at_character(text, limit);
  for (char c : shown) {
    const char one[1] = {detail::shown_character(c)};
    message << std::string_view(one, 1);
  }
  if (shown.size() < text.size()) message << "...";
}

// `bytes` in the largest of B, KiB, MiB, GiB and TiB that keeps the figure at 1 or more, with
// one decimal where it is not whole: "512 B", "1.5 KiB", "64 MiB" (powers of 1024).
inline void append_bytes(detail::Message& message, std::uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  constexpr unsigned kLast = std::size(kUnits) - 1;
  unsigned unit = 0;
  while (unit < kLast && bytes >> (10 * (unit + 1)) != 0) ++unit;
  const unsigned shift = 10 * unit;
  std::uint64_t whole = bytes >> shift;
  std::uint64_t tenths = 0;
  if (shift != 0) {
    const std::uint64_t rest = bytes & ((std::uint64_t{1} << shift) - 1);
    tenths = (rest * 10 + (std::uint64_t{1} << (shift - 1))) >> shift;  // rounded
    if (tenths == 10) {
      ++whole;
      tenths = 0;
    }
  }
  if (whole == 1024 && unit < kLast) {  // 1023.96 KiB is 1 MiB
    whole = 1;
    ++unit;
  }
  message << whole;
  if (tenths != 0) message << "." << tenths;
  message << " " << kUnits[unit];
}

// `bytes` exactly, in the largest unit that needs at most three decimals for it: "32 KiB",
// "1.125 KiB", "64 GiB", "1500 B" (a size class, an option's value).
inline void append_exact_bytes(detail::Message& message, std::uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned unit = std::size(kUnits) - 1;
  // n / 2^shift has at most three decimals when 2^(shift - 3) divides n (1000 = 2^3 * 125).
  while (unit > 0 &&
         (bytes >> (10 * unit) == 0 || bytes % (std::uint64_t{1} << (10 * unit - 3)) != 0))
    --unit;
  const unsigned shift = 10 * unit;
  message << (bytes >> shift);
  if (shift != 0) {
    std::uint64_t thousandths = ((bytes & ((std::uint64_t{1} << shift) - 1)) * 1000) >> shift;
    if (thousandths != 0) {
      const char digits[3] = {static_cast<char>('0' + thousandths / 100),
                              static_cast<char>('0' + thousandths / 10 % 10),
                              static_cast<char>('0' + thousandths % 10)};
      std::size_t count = 3;
      while (count > 1 && digits[count - 1] == '0') --count;
      message << "." << std::string_view(digits, count);
    }
  }
  message << " " << kUnits[unit];
}

}  // namespace poolalloc::internal
