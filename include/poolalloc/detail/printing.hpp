// The pieces of a state line that several allocators print alike, written to a std::ostream or
// to a detail::Message (for reports where nothing may allocate).
#pragma once

#include <cstddef>
#include <string_view>

namespace poolalloc::detail {

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
