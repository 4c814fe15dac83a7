// The function symbols of an ELF file, read from the whole file mapped from disk: its .symtab,
// which linkers write unless the file is stripped and which holds static functions and those of
// anonymous namespaces too, then its .dynsym, the exported functions that a stripped shared
// library keeps. Allocates nothing and asks the dynamic loader nothing: the debug heap's reports
// (call_sites.cpp) and the heap profile's writer (profile_format.cpp) read them inside malloc.
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

struct ElfFile {
  const std::byte* bytes = nullptr;  // nullptr: none
  std::size_t size = 0;
};

// The regular file at `path` mapped whole and read-only (os_map_file), or {} when it cannot be
// opened or mapped or is too short for an ELF header.
ElfFile map_elf_file(const char* path);
void unmap_elf_file(ElfFile file);

struct FunctionSymbol {
  std::uint64_t start = 0;  // in the file's own addresses, as its segments' p_vaddr
  std::uint64_t size = 0;
  const char* name = nullptr;  // mangled as the compiler wrote it, inside the mapped file
};

// The symbols of type STT_FUNC with a size, those of .symtab and then those of .dynsym, in the
// tables' order; those whose tables do not lie whole inside the file are left out.
class FunctionSymbols {
 public:
  explicit FunctionSymbols(ElfFile file);
  bool next(FunctionSymbol& symbol);

 private:
  // Starts on the table of type `type` (SHT_SYMTAB, SHT_DYNSYM); false if the file has none.
  bool open_table(Elf64_Word type);

  ElfFile file_;
  const Elf64_Sym* symbols_ = nullptr;
  std::size_t count_ = 0;
  std::size_t index_ = 0;
  const char* names_ = nullptr;
  std::size_t names_size_ = 0;
  bool on_dynsym_ = false;  // .symtab is done
};

// For an executable mapping of the file from `offset` on: what turns an offset in the file into
// the file's own address of the byte there (p_vaddr - p_offset of the executable PT_LOAD segment
// that the mapping starts in, modulo 2^64), so that the mapping, at `start`, holds the byte of
// file address `address - start + offset + delta` at `address`. False when no such segment is.
bool code_address_delta(ElfFile file, std::uint64_t offset, std::uint64_t& delta);

}  // namespace poolalloc::internal
