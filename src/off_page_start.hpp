// A global of the allocator's fast paths, kept out of the first cache line of every page.
//
// The first line of every page maps to one set of the L1 data cache (the set is the address's
// bits 6 to 11, all below the page's 4 KiB), and so does the first line of every page-aligned
// block a program touches: its requests of 4 KiB and more. A loop over such blocks evicts
// whatever else lies in that set, at each pass. A build whose linker happened to put the free
// path's globals (the pool region's bounds, the free-block key) at a page's start ran the timing
// suite's sweep-4096 5 % slower than one that did not. A global held here lies 64 bytes into an
// aligned pair of lines, so never in a page's first line, wherever the linker puts it.
#pragma once

#include <cstddef>

namespace poolalloc::internal {

template <class T>
struct alignas(128) OffPageStart {
  static_assert(sizeof(T) <= 64, "the value fits the pair's second line");
  std::byte first_line[64]{};  // never read or written
  T value{};
};

}  // namespace poolalloc::internal
