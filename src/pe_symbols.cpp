#include "pe_symbols.hpp"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <cstring>

namespace poolalloc::internal {
namespace {

static_assert(sizeof(IMAGE_SYMBOL) == IMAGE_SIZEOF_SYMBOL);

// The headers of a 64-bit PE image or file of `size` bytes whose section table lies inside it, or
// nullptr.
const IMAGE_NT_HEADERS64* nt_headers(const std::byte* bytes, std::size_t size) {
  if (bytes == nullptr || size < sizeof(IMAGE_DOS_HEADER)) return nullptr;
  const auto* dos = reinterpret_cast<const IMAGE_DOS_HEADER*>(bytes);
  if (dos->e_magic != IMAGE_DOS_SIGNATURE || dos->e_lfanew < 0) return nullptr;
  const auto at = static_cast<std::size_t>(dos->e_lfanew);
  if (at > size || size - at < sizeof(IMAGE_NT_HEADERS64)) return nullptr;
  const auto* nt = reinterpret_cast<const IMAGE_NT_HEADERS64*>(bytes + at);
  if (nt->Signature != IMAGE_NT_SIGNATURE ||
      nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC)
    return nullptr;
  const std::size_t sections =
      at + offsetof(IMAGE_NT_HEADERS64, OptionalHeader) + nt->FileHeader.SizeOfOptionalHeader;
  if (sections > size ||
      nt->FileHeader.NumberOfSections > (size - sections) / sizeof(IMAGE_SECTION_HEADER))
    return nullptr;
  return nt;
}

const IMAGE_SECTION_HEADER* section_table(const IMAGE_NT_HEADERS64* nt) {
  return reinterpret_cast<const IMAGE_SECTION_HEADER*>(
      reinterpret_cast<const std::byte*>(nt) + offsetof(IMAGE_NT_HEADERS64, OptionalHeader) +
      nt->FileHeader.SizeOfOptionalHeader);
}

// The index of the section that holds the image's byte at `offset`, or -1.
int section_of(const IMAGE_NT_HEADERS64* nt, std::uint32_t offset) {
  const IMAGE_SECTION_HEADER* sections = section_table(nt);
  for (int i = 0; i < nt->FileHeader.NumberOfSections; ++i) {
    const std::uint32_t size = sections[i].Misc.VirtualSize > sections[i].SizeOfRawData
                                   ? sections[i].Misc.VirtualSize
                                   : sections[i].SizeOfRawData;
    if (offset - sections[i].VirtualAddress < size) return i;
  }
  return -1;
}

// Copies the name at `from`, of at most `most` bytes (it ends at a NUL or there), into `to`.
void copy_name(char* to, std::size_t capacity, const char* from, std::size_t most) {
  std::size_t length = 0;
  while (length < most && from[length] != '\0') ++length;
  if (length >= capacity) length = capacity - 1;
  std::memcpy(to, from, length);
  to[length] = '\0';
}

// The image's exception table (.pdata): the first and last byte of every function that has unwind
// data, as x86-64's gcc gives every function it builds with unwind tables (its default).
struct UnwindTable {
  const RUNTIME_FUNCTION* functions = nullptr;
  std::size_t count = 0;
};

UnwindTable unwind_table(const std::byte* image, const IMAGE_NT_HEADERS64* nt) {
  const std::size_t size = nt->OptionalHeader.SizeOfImage;
  if (nt->OptionalHeader.NumberOfRvaAndSizes <= IMAGE_DIRECTORY_ENTRY_EXCEPTION) return {};
  const IMAGE_DATA_DIRECTORY directory =
      nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXCEPTION];
  if (directory.VirtualAddress > size || directory.Size > size - directory.VirtualAddress)
    return {};
  return {reinterpret_cast<const RUNTIME_FUNCTION*>(image + directory.VirtualAddress),
          directory.Size / sizeof(RUNTIME_FUNCTION)};
}

// Where the function that holds `offset` starts, or 0 when no entry holds it.
std::uint32_t function_start(UnwindTable table, std::uint32_t offset) {
  for (std::size_t i = 0; i < table.count; ++i) {
    const RUNTIME_FUNCTION& function = table.functions[i];
    if (offset - function.BeginAddress < function.EndAddress - function.BeginAddress)
      return function.BeginAddress;
  }
  return 0;
}

// Whether the table shows a function ending between `from` and `offset`: one that holds `from`
// ends at or before `offset`, or one starts after `from`, at or before `offset`. A symbol at
// `from` is then no name for the code at `offset`, which no entry holds (code built without
// unwind tables, or written in assembly).
bool function_ends_between(UnwindTable table, std::uint32_t from, std::uint32_t offset) {
  for (std::size_t i = 0; i < table.count; ++i) {
    const RUNTIME_FUNCTION& function = table.functions[i];
    const bool holds_from =
        from - function.BeginAddress < function.EndAddress - function.BeginAddress;
    if ((holds_from && function.EndAddress <= offset) ||
        (function.BeginAddress > from && function.BeginAddress <= offset))
      return true;
  }
  return false;
}

// The COFF symbol table of `file`, if `file` is the module whose headers `image` are: the
// function symbol of the section that holds `offset` that starts last at or before it, if it is
// the name of the function that holds `offset` by the image's exception table `unwind`: the
// symbol starts where that function starts, or, where no entry holds `offset`, no function ends
// between them. A function without a symbol of its own (a static one linked with -Wl,-x, one of
// a library's local functions) follows another function's symbol, which is no name for it.
bool symbol_table_function(PeFile file, const IMAGE_NT_HEADERS64* image, UnwindTable unwind,
                           std::uint32_t offset, char* name, std::size_t capacity,
                           std::uint32_t& start) {
  const IMAGE_NT_HEADERS64* nt = nt_headers(file.bytes, file.size);
  if (nt == nullptr || nt->FileHeader.TimeDateStamp != image->FileHeader.TimeDateStamp ||
      nt->OptionalHeader.SizeOfImage != image->OptionalHeader.SizeOfImage)
    return false;  // not the module's file (another build of it since it was loaded)
  const std::size_t table = nt->FileHeader.PointerToSymbolTable;
  const std::size_t count = nt->FileHeader.NumberOfSymbols;
  if (table == 0 || table > file.size || count > (file.size - table) / IMAGE_SIZEOF_SYMBOL)
    return false;  // stripped, or a table that does not lie inside the file
  // The string table follows the symbols: its size (its own 4 bytes included), then the names.
  const std::size_t strings = table + count * IMAGE_SIZEOF_SYMBOL;
  std::uint32_t strings_size = 0;
  if (file.size - strings >= sizeof strings_size)
    std::memcpy(&strings_size, file.bytes + strings, sizeof strings_size);
  if (strings_size > file.size - strings) strings_size = 0;
  const int section = section_of(nt, offset);
  if (section < 0) return false;
  const std::uint32_t in_section = offset - section_table(nt)[section].VirtualAddress;
  IMAGE_SYMBOL best{};
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) {
    IMAGE_SYMBOL symbol;
    std::memcpy(&symbol, file.bytes + table + i * IMAGE_SIZEOF_SYMBOL, sizeof symbol);
    i += symbol.NumberOfAuxSymbols;  // the auxiliary records that follow the symbol
    if (symbol.SectionNumber != section + 1 || !ISFCN(symbol.Type) ||
        (symbol.StorageClass != IMAGE_SYM_CLASS_EXTERNAL &&
         symbol.StorageClass != IMAGE_SYM_CLASS_STATIC) ||
        symbol.Value > in_section || (found && symbol.Value <= best.Value))
      continue;
    if (symbol.N.Name.Short == 0 &&
        (symbol.N.Name.Long < sizeof strings_size || symbol.N.Name.Long >= strings_size))
      continue;  // a long name outside the string table
    best = symbol;
    found = true;
  }
  if (!found) return false;
  const std::uint32_t symbol_start = section_table(nt)[section].VirtualAddress + best.Value;
  const std::uint32_t holder = function_start(unwind, offset);
  if (holder != 0 ? symbol_start != holder : function_ends_between(unwind, symbol_start, offset))
    return false;
  if (best.N.Name.Short != 0) {  // up to 8 bytes in the record, NUL-terminated only if shorter
    copy_name(name, capacity, reinterpret_cast<const char*>(best.N.ShortName),
              sizeof best.N.ShortName);
  } else {
    copy_name(name, capacity,
              reinterpret_cast<const char*>(file.bytes + strings + best.N.Name.Long),
              strings_size - best.N.Name.Long);
  }
  start = symbol_start;
  return true;
}

// The export table of the image in memory: the exported function that starts at `holder`, where
// the function that holds the call site starts (function_start). Another function's export is no
// name for it (the table gives no sizes): a call site in a function that is not exported gets none.
bool exported_function(const std::byte* image, const IMAGE_NT_HEADERS64* nt, std::uint32_t holder,
                       char* name, std::size_t capacity, std::uint32_t& start) {
  const std::size_t size = nt->OptionalHeader.SizeOfImage;
  if (nt->OptionalHeader.NumberOfRvaAndSizes <= IMAGE_DIRECTORY_ENTRY_EXPORT) return false;
  const IMAGE_DATA_DIRECTORY directory =
      nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
  if (directory.Size == 0 || directory.VirtualAddress > size ||
      size - directory.VirtualAddress < sizeof(IMAGE_EXPORT_DIRECTORY))
    return false;
  const auto* exports =
      reinterpret_cast<const IMAGE_EXPORT_DIRECTORY*>(image + directory.VirtualAddress);
  const auto inside = [size](std::size_t at, std::size_t bytes) {
    return at <= size && bytes <= size - at;
  };
  if (!inside(exports->AddressOfFunctions, std::size_t{exports->NumberOfFunctions} * 4) ||
      !inside(exports->AddressOfNames, std::size_t{exports->NumberOfNames} * 4) ||
      !inside(exports->AddressOfNameOrdinals, std::size_t{exports->NumberOfNames} * 2))
    return false;
  const auto* functions = reinterpret_cast<const DWORD*>(image + exports->AddressOfFunctions);
  const auto* names = reinterpret_cast<const DWORD*>(image + exports->AddressOfNames);
  const auto* ordinals = reinterpret_cast<const WORD*>(image + exports->AddressOfNameOrdinals);
  if (holder == 0) return false;
  for (DWORD i = 0; i < exports->NumberOfNames; ++i) {
    if (ordinals[i] >= exports->NumberOfFunctions || names[i] >= size ||
        functions[ordinals[i]] != holder)
      continue;
    copy_name(name, capacity, reinterpret_cast<const char*>(image + names[i]), size - names[i]);
    start = holder;
    return true;
  }
  return false;
}

}  // namespace

namespace {

// The Win32 path of an NT path: Win32 opens one through the \\?\ prefix, \??\C:\game.exe as
// \\?\C:\game.exe, and \Device\HarddiskVolume3\game.exe as
// \\?\GLOBALROOT\Device\HarddiskVolume3\game.exe. False for a path that does not fit.
bool win32_path(const char* mapped_path, char (&path)[MAX_PATH + 32]) {
  const char* prefix = "";
  if (std::strncmp(mapped_path, "\\??\\", 4) == 0) {
    prefix = "\\\\?\\";
    mapped_path += 4;
  } else if (mapped_path[0] == '\\') {
    prefix = "\\\\?\\GLOBALROOT";
  }
  const std::size_t prefix_length = std::strlen(prefix);
  const std::size_t length = std::strlen(mapped_path);
  if (prefix_length + length >= sizeof path) return false;
  std::memcpy(path, prefix, prefix_length);
  std::memcpy(path + prefix_length, mapped_path, length + 1);
  return true;
}

std::uint64_t write_time_of(FILETIME time) {
  return std::uint64_t{time.dwHighDateTime} << 32 | time.dwLowDateTime;
}

}  // namespace

PeFile map_pe_file(const char* mapped_path) {
  char path[MAX_PATH + 32];
  if (!win32_path(mapped_path, path)) return {};
  const HANDLE file =
      CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                  nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) return {};
  PeFile mapped;
  LARGE_INTEGER size{};
  FILETIME written{};
  if (GetFileSizeEx(file, &size) && size.QuadPart > 0 &&
      GetFileTime(file, nullptr, nullptr, &written)) {
    if (const HANDLE mapping = CreateFileMappingA(file, nullptr, PAGE_READONLY, 0, 0, nullptr)) {
      if (const void* view = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0))
        mapped = {static_cast<const std::byte*>(view), static_cast<std::size_t>(size.QuadPart),
                  write_time_of(written)};
      CloseHandle(mapping);  // the view keeps the file mapped
    }
  }
  CloseHandle(file);
  return mapped;
}

void unmap_pe_file(PeFile file) {
  if (file.bytes != nullptr) UnmapViewOfFile(file.bytes);
}

bool pe_file_unchanged(const char* mapped_path, PeFile file) {
  char path[MAX_PATH + 32];
  WIN32_FILE_ATTRIBUTE_DATA now{};
  if (file.bytes == nullptr || !win32_path(mapped_path, path) ||
      !GetFileAttributesExA(path, GetFileExInfoStandard, &now))
    return false;
  return write_time_of(now.ftLastWriteTime) == file.written &&
         (std::uint64_t{now.nFileSizeHigh} << 32 | now.nFileSizeLow) == file.size;
}

bool pe_function_at(const std::byte* image, PeFile file, std::uint32_t offset, char* name,
                    std::size_t capacity, std::uint32_t& start) {
  // The headers of a loaded image lie in its first page, which the loader maps.
  const IMAGE_NT_HEADERS64* nt = nt_headers(image, 4096);
  if (nt == nullptr || capacity == 0) return false;
  const UnwindTable unwind = unwind_table(image, nt);
  return symbol_table_function(file, nt, unwind, offset, name, capacity, start) ||
         exported_function(image, nt, function_start(unwind, offset), name, capacity, start);
}

}  // namespace poolalloc::internal
