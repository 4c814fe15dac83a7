#include "call_sites.hpp"

#include <cstring>

#include "elf_symbols.hpp"
#include "lock.hpp"
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
  ElfFile file;
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
    if (std::strcmp(module.path, path) == 0)
      return module.file.bytes != nullptr ? &module : nullptr;
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
  slot->file = map_elf_file(path);
  return slot->file.bytes != nullptr ? slot : nullptr;
}

struct Symbol {
  const char* name = nullptr;
  std::uintptr_t start = 0;
};

// The function symbol of `module` that covers `address` (an address as the file sees it).
Symbol find_function(const MappedModule& module, std::uintptr_t address) {
  FunctionSymbols symbols(module.file);
  FunctionSymbol symbol;
  while (symbols.next(symbol))
    if (address - symbol.start < symbol.size) return {symbol.name, symbol.start};
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
        reinterpret_cast<const Elf64_Ehdr*>(module->file.bytes)->e_type == ET_DYN;
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
