// Bins: a bin is a (memory tag, size class) pair, the unit that spans, the central lists and the
// thread caches serve. A span serves one bin, so every block of it belongs to one tag, and a
// block's tag is read from its span's record as its class is: free needs no lookup to discharge
// the tag its malloc charged, whichever thread frees it. Tag 0 is "untagged", and its bins are
// the size classes themselves (bin == class), so a program that never pushes a tag uses bins
// 0 .. kClassCount - 1 only, as it used the classes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "size_classes.hpp"

namespace poolalloc::internal {

inline constexpr unsigned kTagCount = 256;  // tag 0, untagged, and 255 that programs register
inline constexpr unsigned kBinCount = kTagCount * kClassCount;

constexpr unsigned bin_of(unsigned tag, unsigned cls) {
  return tag * kClassCount + cls;
}
constexpr unsigned bin_class(unsigned bin) {
  return bin % kClassCount;
}
constexpr unsigned bin_tag(unsigned bin) {
  return bin / kClassCount;
}
// The size of the blocks of bin `bin`.
constexpr std::uint32_t bin_block_size(unsigned bin) {
  return class_size(bin_class(bin));
}

}  // namespace poolalloc::internal
