#include "call_sites.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "lock.hpp"
#include "os.hpp"
#include "process_maps.hpp"

namespace poolalloc::internal {
namespace {

// Paths longer than this leave their call sites as bare addresses.
constexpr std::size_t kMaxPath = 512;

// The file mapped at a code address, and where the file's first byte is mapped (its load base,
// for a position-independent file whose first segment starts at address 0, as linkers make them).
struct CodeMapping {
  char path[kMaxPath] = {};
  std::uintptr_t file_start = 0;
};

// A module's file, mapped once and kept: reports name call sites until the process ends.
struct MappedModule {
  char path[kMaxPath] = {};
  const std::byte* image = nullptr;
  std::size_t size = 0;
};
constexpr int kModuleCacheSize = 16;
MappedModule g_modules[kModuleCacheSize];
Lock g_modules_lock;

// Reads /proc/self/maps for the mapping that holds `address`, with a buffer on the stack: no
// allocation, and no call into the dynamic loader (a report is written under the debug heap's
// lock, which a thread inside dlopen may be waiting for in malloc while it holds the loader's).
// The mapping with offset 0 of a file comes first, at its lowest address, so each one seen is
// remembered in `found` until the mapping that holds `address`, which must be of the same file.
bool find_code_mapping(std::uintptr_t address, CodeMapping& found) {
  char buffer[2048];
  ProcessMapsReader maps(buffer, sizeof buffer);
  ProcessMapping mapping;
  while (maps.next(mapping)) {
    const std::string_view path = mapping.path;
    const bool holds = address - mapping.start < mapping.end - mapping.start;
    if (mapping.offset == 0 && path.size() < kMaxPath && (holds || !path.empty())) {
      std::memcpy(found.path, path.data(), path.size());
      found.path[path.size()] = '\0';
      found.file_start = mapping.start;
    }
    if (!holds) continue;
    if (path.size() >= kMaxPath || path != found.path)
      found.path[0] = '\0';  // no file, or not the one whose start was seen
    return found.path[0] != '\0';
  }
  return false;
}

const MappedModule* map_module(const char (&path)[kMaxPath]) {
  for (const MappedModule& module : g_modules) {
    if (std::strcmp(module.path, path) == 0) return module.image != nullptr ? &module : nullptr;
  }
  MappedModule* slot = nullptr;
  for (MappedModule& module : g_modules) {
    if (module.path[0] == '\0') {
      slot = &module;
      break;
    }
  }
  if (slot == nullptr) return nullptr;
  std::memcpy(slot->path, path, kMaxPath);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat status {};
  const void* image = nullptr;
  if (fstat(fd, &status) == 0 && status.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr)))
    image = os_map_file(fd, static_cast<std::size_t>(status.st_size));
  close(fd);
  if (image == nullptr) return nullptr;
  slot->image = static_cast<const std::byte*>(image);
  slot->size = static_cast<std::size_t>(status.st_size);
  return slot;
}

struct Symbol {
  const char* name = nullptr;
  std::uintptr_t start = 0;
};

// The function symbol of `module` that covers `address` (an address as the file sees it),
// looked up in .symtab, else in .dynsym.
Symbol find_function(const MappedModule& module, std::uintptr_t address) {
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(module.image);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_shoff + std::size_t{header->e_shnum} * sizeof(Elf64_Shdr) > module.size)
    return {};
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(module.image + header->e_shoff);
  for (const Elf64_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (unsigned i = 0; i < header->e_shnum; ++i) {
      const Elf64_Shdr& table = sections[i];
      if (table.sh_type != type || table.sh_link >= header->e_shnum) continue;
      const Elf64_Shdr& names = sections[table.sh_link];
      if (table.sh_offset + table.sh_size > module.size ||
          names.sh_offset + names.sh_size > module.size)
        continue;
      const auto* symbols = reinterpret_cast<const Elf64_Sym*>(module.image + table.sh_offset);
      for (std::size_t s = 0; s < table.sh_size / sizeof(Elf64_Sym); ++s) {
        const Elf64_Sym& symbol = symbols[s];
        if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_name >= names.sh_size ||
            address - symbol.st_value >= symbol.st_size)
          continue;
        return {reinterpret_cast<const char*>(module.image + names.sh_offset + symbol.st_name),
                symbol.st_value};
      }
    }
  }
  return {};
}

}  // namespace

void append_call_site(detail::Message& message, const void* address) {
  const auto code = reinterpret_cast<std::uintptr_t>(address);
  CodeMapping mapping;
  if (address == nullptr || !find_code_mapping(code, mapping)) {
    message << address;
    return;
  }
  LockGuard guard(g_modules_lock);
  const MappedModule* module = map_module(mapping.path);
  Symbol symbol;
  if (module != nullptr) {
    const bool position_independent =
        reinterpret_cast<const Elf64_Ehdr*>(module->image)->e_type == ET_DYN;
    const std::uintptr_t base = position_independent ? mapping.file_start : 0;
    symbol = find_function(*module, code - base);
    symbol.start += base;
  }
  if (symbol.name != nullptr) {
    message << symbol.name << "+";
    message.hex(code - symbol.start);
  } else {
    message << address;
  }
  message << " (" << mapping.path << ")";
}

}  // namespace poolalloc::internal
