// Names a code address for a report on Windows (call_sites.hpp): "function+0x1f (path)", as on
// Linux, the function from the module's COFF symbol table or export table (pe_symbols.hpp); a
// module that has neither (a stripped program) gives "module+0x1f (path)", the offset from the
// image's start, which addr2line or a debugger turns into a function given an unstripped copy.
// The module is found by the address (VirtualQuery: where its image's allocation begins) and its
// file by the memory manager's own record of the mapped image (GetMappedFileNameA, an NT path
// such as \Device\HarddiskVolume3\games\game.exe). Neither takes the loader's lock, which a thread
// inside LoadLibrary may hold while it waits in malloc for the debug heap's.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
// After windows.h, which it needs.
#include <psapi.h>

#include <cstdint>
#include <cstring>

#include "call_sites.hpp"
#include "lock.hpp"
#include "pe_symbols.hpp"

namespace poolalloc::internal {
namespace {

// A module's file, mapped once and kept while it is the file at its path: reports name call sites
// until the process ends, and a DLL rebuilt at its path (a hot reload) is mapped again.
struct MappedModule {
  char path[MAX_PATH] = {};
  PeFile file;
};
constexpr int kModuleCacheSize = 16;
MappedModule g_modules[kModuleCacheSize];
Lock g_modules_lock;  // taken under the debug heap's (lock.hpp): nothing is taken under it

// The file at `path` ({} if it cannot be mapped: its call sites take the export table alone), or
// {} when the cache is full.
PeFile module_file(const char (&path)[MAX_PATH]) {
  for (MappedModule& module : g_modules) {
    if (std::strcmp(module.path, path) != 0) continue;
    if (!pe_file_unchanged(path, module.file)) {
      unmap_pe_file(module.file);  // read only under g_modules_lock
      module.file = map_pe_file(path);
    }
    return module.file;
  }
  for (MappedModule& module : g_modules) {
    if (module.path[0] == '\0') {
      std::memcpy(module.path, path, MAX_PATH);
      module.file = map_pe_file(path);
      return module.file;
    }
  }
  return {};
}

}  // namespace

void append_call_site(detail::Message& message, const void* address) {
  MEMORY_BASIC_INFORMATION info{};
  char path[MAX_PATH] = {};
  if (address == nullptr || VirtualQuery(address, &info, sizeof info) == 0 ||
      info.Type != MEM_IMAGE ||
      GetMappedFileNameA(GetCurrentProcess(), info.AllocationBase, path, sizeof path) == 0) {
    message << address;
    return;
  }
  const auto* image = static_cast<const std::byte*>(info.AllocationBase);
  // An image is smaller than 4 GiB.
  const auto offset = static_cast<std::uint32_t>(static_cast<const std::byte*>(address) - image);
  char function[512];
  std::uint32_t start = 0;
  bool named = false;
  {
    LockGuard guard(g_modules_lock);
    named = pe_function_at(image, module_file(path), offset, function, sizeof function, start);
  }
  if (named) {
    message << function << "+";
    message.hex(offset - start);
  } else {
    const char* name = path;
    for (const char* at = path; *at != '\0'; ++at) {
      if (*at == '\\' || *at == '/') name = at + 1;
    }
    message << name << "+";
    message.hex(offset);
  }
  message << " (" << path << ")";
}

}  // namespace poolalloc::internal
