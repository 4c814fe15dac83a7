// The function names of a loaded PE module (an .exe or a .dll): its COFF symbol table, which
// mingw-w64's linker writes into the file unless it is stripped (PointerToSymbolTable and
// NumberOfSymbols of the file header, the string table after it), and which holds static
// functions and those of anonymous namespaces too; else the export table of the image in memory,
// the exported functions that a stripped DLL keeps. Allocates nothing and takes no lock of the
// loader's: the debug heap's reports (call_sites_windows.cpp) read them inside malloc, maybe while
// another thread is inside LoadLibrary.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

struct PeFile {
  const std::byte* bytes = nullptr;  // nullptr: none
  std::size_t size = 0;
  std::uint64_t written = 0;  // the file's last write time when it was mapped
};

// The file that GetMappedFileNameA names for a mapped image, an NT path (under
// \Device\HarddiskVolume3 on Windows, \??\C: under wine), mapped whole and read-only, or {}
// when it cannot be opened or mapped. The mapping stays until unmap_pe_file.
PeFile map_pe_file(const char* mapped_path);
void unmap_pe_file(PeFile file);
// Whether the file at `mapped_path` is still the one that `file` mapped: the same last write time
// and size. Not after a DLL was rebuilt at that path (a hot reload), whatever its headers say.
bool pe_file_unchanged(const char* mapped_path, PeFile file);

// The function of the module loaded at `image` that holds the address image + `offset`: its name
// (mangled as the compiler wrote it) copied into `name`, NUL-terminated and cut to `capacity`
// bytes, and the offset of its first byte in `start`. From `file`'s symbol table when `file` is
// the module's (its headers' time stamp and image size are those of the image): the function
// symbol that starts last at or before the address in the section that holds it, if it starts
// where the image's exception table says that the function holding the address starts (else it
// is another function's, and the address's function has no symbol of its own). Else from the
// image's export table: the export that starts where the image's exception table says that the
// function holding the address starts. False when neither names it.
bool pe_function_at(const std::byte* image, PeFile file, std::uint32_t offset, char* name,
                    std::size_t capacity, std::uint32_t& start);

}  // namespace poolalloc::internal
