// The pieces of a state line that several allocators print alike, written to a std::ostream or
// to a detail::Message (for reports where nothing may allocate).
#pragma once

#include <cstddef>
#include <ios>
#include <locale>
#include <ostream>
#include <sstream>
#include <string_view>

namespace poolalloc::detail {

// Sets a stream to print numbers in decimal, padded with spaces, in the classic locale (no
// thousands separators, in figures or addresses), for as long as it lives; then gives the stream
// back the flags (base, adjustment, ...), the fill and the locale it had.
class DecimalOutput {
 public:
  explicit DecimalOutput(std::ostream& out)
      : out_(out),
        flags_(out.flags(std::ios_base::dec)),
        fill_(out.fill(' ')),
        locale_(out.imbue(std::locale::classic())) {}
  DecimalOutput(const DecimalOutput&) = delete;
  DecimalOutput& operator=(const DecimalOutput&) = delete;
  ~DecimalOutput() {
    out_.flags(flags_);
    out_.fill(fill_);
    out_.imbue(locale_);
  }

 private:
  std::ostream& out_;
  std::ios_base::fmtflags flags_;
  char fill_;
  std::locale locale_;
};

// Writes the state line that write(line) writes to `line`, as one field: a width set on `out`
// (std::setw) pads the whole line, with out's fill and adjustment, as the standard's operator<< of
// std::complex pads the number, where it would pad the line's first word alone. Numbers in
// decimal, in the classic locale, either way (DecimalOutput). Without a width, written to `out`
// directly, allocating nothing.
template <class Write>
std::ostream& write_line(std::ostream& out, Write&& write) {
  if (out.width() == 0) {
    const DecimalOutput decimal(out);
    write(out);
    return out;
  }
  std::ostringstream line;
  {
    const DecimalOutput decimal(line);
    write(static_cast<std::ostream&>(line));
  }
  return out << std::move(line).str();
}

// `FixedPool "bullets"`, or `FixedPool 0x7f...` for an allocator without a name.
template <class Out>
Out& write_title(Out& out, std::string_view kind, std::string_view name, const void* self) {
  out << kind << " ";
  if (name.empty()) {
    out << self;
  } else {
    out << "\"" << name << "\"";
  }
  return out;
}

// `, 2 chunks, debug checks on`
template <class Out>
Out& write_chunks_and_checks(Out& out, std::size_t chunks, bool debug_checks) {
  out << ", " << chunks << (chunks == 1 ? " chunk" : " chunks") << ", debug checks "
      << (debug_checks ? "on" : "off");
  return out;
}

}  // namespace poolalloc::detail
