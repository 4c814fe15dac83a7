#include "call_sites.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "lock.hpp"
#include "os.hpp"

namespace poolalloc::internal {
namespace {

// A module's file, mapped once and kept: reports name call sites until the process ends.
struct MappedModule {
  const char* path = nullptr;  // as dladdr gives it, stable while the module is loaded
  const std::byte* image = nullptr;
  std::size_t size = 0;
};
constexpr int kModuleCacheSize = 16;
MappedModule g_modules[kModuleCacheSize];
Lock g_modules_lock;

const MappedModule* map_module(const char* path) {
  for (const MappedModule& module : g_modules) {
    if (module.path == path) return module.image != nullptr ? &module : nullptr;
  }
  MappedModule* slot = nullptr;
  for (MappedModule& module : g_modules) {
    if (module.path == nullptr) {
      slot = &module;
      break;
    }
  }
  if (slot == nullptr) return nullptr;
  slot->path = path;
  // The main program may be named by a relative path, or not at all.
  const char* file = path[0] == '/' ? path : "/proc/self/exe";
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
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
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    message << address;
    return;
  }
  const auto code = reinterpret_cast<std::uintptr_t>(address);
  const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  LockGuard guard(g_modules_lock);
  const MappedModule* module = map_module(info.dli_fname);
  Symbol symbol;
  if (module != nullptr) {
    const bool position_independent =
        reinterpret_cast<const Elf64_Ehdr*>(module->image)->e_type == ET_DYN;
    const std::uintptr_t file_address = position_independent ? code - base : code;
    symbol = find_function(*module, file_address);
    if (symbol.name != nullptr && position_independent) symbol.start += base;
  }
  if (symbol.name == nullptr && info.dli_sname != nullptr)
    symbol = {info.dli_sname, reinterpret_cast<std::uintptr_t>(info.dli_saddr)};
  if (symbol.name != nullptr) {
    message << symbol.name << "+";
    message.hex(code - symbol.start);
  } else {
    message << address;
  }
  message << " (" << (info.dli_fname[0] != '\0' ? info.dli_fname : "the program") << ")";
}

}  // namespace poolalloc::internal
