// The GNU build ID of an ELF file, read from the file's image in memory: the NT_GNU_BUILD_ID note
// that linkers put in a PT_NOTE segment near the file's start, the bytes by which pprof, gdb and
// debuginfod tell one build of a binary from another. Reads memory only, allocates nothing.
#pragma once

#include <cstddef>

namespace poolalloc::internal {

// `image` is where the file's first byte is mapped and `size` how many bytes from there may be
// read (the mapping of offset 0): the headers and the note are looked for within them only.
// Writes the ID to `hex` as lowercase hexadecimal, two digits a byte, and returns how many digits
// it wrote: 0 when there is none (not an ELF file, no note within the bytes given) or it does not
// fit `capacity`.
std::size_t read_build_id(const void* image, std::size_t size, char* hex, std::size_t capacity);

}  // namespace poolalloc::internal
