#include "elf_build_id.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace poolalloc::internal {
namespace {

constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t alignment) {
  return (n + alignment - 1) & ~(alignment - 1);
}

std::size_t write_hex(const unsigned char* bytes, std::size_t count, char* hex,
                      std::size_t capacity) {
  if (count > capacity / 2) return 0;
  for (std::size_t i = 0; i < count; ++i) {
    hex[2 * i] = "0123456789abcdef"[bytes[i] >> 4];
    hex[2 * i + 1] = "0123456789abcdef"[bytes[i] & 0xf];
  }
  return 2 * count;
}

// The notes of one PT_NOTE segment, `size` bytes at `notes`: each a header, its name and its
// descriptor, the descriptor and the next note at offsets from the segment's start rounded up to
// the segment's alignment (4, or 8 for notes such as .note.gnu.property in a segment of their
// own), as glibc's loader reads them.
std::size_t find_in_notes(const unsigned char* notes, std::uint64_t size, std::uint64_t alignment,
                          char* hex, std::size_t capacity) {
  std::uint64_t at = 0;
  while (at < size && size - at >= sizeof(Elf64_Nhdr)) {
    Elf64_Nhdr note;
    std::memcpy(&note, notes + at, sizeof note);  // the image need not be aligned
    const std::uint64_t name = at + sizeof note;
    const std::uint64_t descriptor = round_up(name + note.n_namesz, alignment);
    if (descriptor > size || note.n_descsz > size - descriptor) return 0;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == sizeof ELF_NOTE_GNU &&
        std::memcmp(notes + name, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0)
      return write_hex(notes + descriptor, note.n_descsz, hex, capacity);
    at = round_up(descriptor + note.n_descsz, alignment);
  }
  return 0;
}

}  // namespace

std::size_t read_build_id(const void* image, std::size_t size, char* hex, std::size_t capacity) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  Elf64_Ehdr header;
  if (size < sizeof header) return 0;
  std::memcpy(&header, bytes, sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phoff > size ||
      header.e_phnum > (size - header.e_phoff) / sizeof(Elf64_Phdr))
    return 0;
  for (std::size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, bytes + header.e_phoff + i * sizeof segment, sizeof segment);
    // Within the mapping of offset 0, a byte's address is the image's plus its file offset.
    if (segment.p_type != PT_NOTE || segment.p_offset > size ||
        segment.p_filesz > size - segment.p_offset)
      continue;
    const std::size_t digits = find_in_notes(bytes + segment.p_offset, segment.p_filesz,
                                             segment.p_align == 8 ? 8 : 4, hex, capacity);
    if (digits != 0) return digits;
  }
  return 0;
}

}  // namespace poolalloc::internal
