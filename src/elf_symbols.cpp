#include "elf_symbols.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "os.hpp"

namespace poolalloc::internal {
namespace {

// The file's header, or nullptr when it is no 64-bit ELF file whose section and program header
// tables lie inside it.
const Elf64_Ehdr* elf_header(ElfFile file) {
  if (file.bytes == nullptr) return nullptr;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(file.bytes);
  const bool fits = std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 &&
                    header->e_ident[EI_CLASS] == ELFCLASS64 && header->e_shoff <= file.size &&
                    header->e_shnum <= (file.size - header->e_shoff) / sizeof(Elf64_Shdr) &&
                    header->e_phoff <= file.size &&
                    header->e_phnum <= (file.size - header->e_phoff) / sizeof(Elf64_Phdr);
  return fits ? header : nullptr;
}

bool inside(ElfFile file, std::uint64_t offset, std::uint64_t size) {
  return offset <= file.size && size <= file.size - offset;
}

}  // namespace

ElfFile map_elf_file(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat status {};
  ElfFile file;
  if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
      status.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    const std::size_t size = static_cast<std::size_t>(status.st_size);
    if (const void* image = os_map_file(fd, size))
      file = {static_cast<const std::byte*>(image), size};
  }
  close(fd);
  return file;
}

void unmap_elf_file(ElfFile file) {
  if (file.bytes != nullptr) os_unmap(const_cast<std::byte*>(file.bytes), file.size);
}

FunctionSymbols::FunctionSymbols(ElfFile file) : file_(file) {
  if (!open_table(SHT_SYMTAB)) {
    on_dynsym_ = true;
    open_table(SHT_DYNSYM);
  }
}

bool FunctionSymbols::open_table(Elf64_Word type) {
  symbols_ = nullptr;
  count_ = index_ = 0;
  const Elf64_Ehdr* header = elf_header(file_);
  if (header == nullptr) return false;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(file_.bytes + header->e_shoff);
  for (unsigned i = 0; i < header->e_shnum; ++i) {
    const Elf64_Shdr& table = sections[i];
    if (table.sh_type != type || table.sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& names = sections[table.sh_link];
    // The last byte of the names must be a NUL, so that every name ends inside them.
    if (!inside(file_, table.sh_offset, table.sh_size) ||
        !inside(file_, names.sh_offset, names.sh_size) || names.sh_size == 0 ||
        file_.bytes[names.sh_offset + names.sh_size - 1] != std::byte{0})
      continue;
    symbols_ = reinterpret_cast<const Elf64_Sym*>(file_.bytes + table.sh_offset);
    count_ = table.sh_size / sizeof(Elf64_Sym);
    names_ = reinterpret_cast<const char*>(file_.bytes + names.sh_offset);
    names_size_ = names.sh_size;
    return true;
  }
  return false;
}

bool FunctionSymbols::next(FunctionSymbol& symbol) {
  for (;;) {
    for (; index_ < count_; ++index_) {
      const Elf64_Sym& entry = symbols_[index_];
      if (ELF64_ST_TYPE(entry.st_info) != STT_FUNC || entry.st_size == 0 ||
          entry.st_name >= names_size_)
        continue;
      symbol = {entry.st_value, entry.st_size, names_ + entry.st_name};
      ++index_;
      return true;
    }
    if (on_dynsym_) return false;
    on_dynsym_ = true;
    open_table(SHT_DYNSYM);
  }
}

bool code_address_delta(ElfFile file, std::uint64_t offset, std::uint64_t& delta) {
  const Elf64_Ehdr* header = elf_header(file);
  if (header == nullptr) return false;
  const auto* segments = reinterpret_cast<const Elf64_Phdr*>(file.bytes + header->e_phoff);
  for (unsigned i = 0; i < header->e_phnum; ++i) {
    const Elf64_Phdr& segment = segments[i];
    // The loader maps a segment from the page that holds its first byte, which may also hold the
    // end of the segment before it (as lld lays files out): the executable one is the one.
    const std::uint64_t first_page = segment.p_offset & ~std::uint64_t{kPageSize - 1};
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0 || offset < first_page ||
        offset >= segment.p_offset + segment.p_filesz)
      continue;
    delta = segment.p_vaddr - segment.p_offset;
    return true;
  }
  return false;
}

}  // namespace poolalloc::internal
