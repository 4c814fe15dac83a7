// Names a code address for a report on Windows (call_sites.hpp): "module+0x1f (path)", the
// module found by the address (VirtualQuery: where its image's allocation begins) and its file
// by the memory manager's own record of the mapped image (GetMappedFileNameA, a device path such
// as \Device\HarddiskVolume3\games\game.exe). Neither takes the loader's lock, which a thread
// inside LoadLibrary may hold while it waits in malloc for the debug heap's. A PE file's symbols
// are in a separate debug file (.pdb) or in DWARF sections that this does not read: addr2line
// or a debugger turns the offset into a function and a line.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
// After windows.h, which it needs.
#include <psapi.h>

#include <cstdint>
#include <cstring>

#include "call_sites.hpp"

namespace poolalloc::internal {

void append_call_site(detail::Message& message, const void* address) {
  MEMORY_BASIC_INFORMATION info{};
  char path[MAX_PATH];
  if (address == nullptr || VirtualQuery(address, &info, sizeof info) == 0 ||
      info.Type != MEM_IMAGE ||
      GetMappedFileNameA(GetCurrentProcess(), info.AllocationBase, path, sizeof path) == 0) {
    message << address;
    return;
  }
  const char* name = path;
  for (const char* at = path; *at != '\0'; ++at) {
    if (*at == '\\' || *at == '/') name = at + 1;
  }
  message << name << "+";
  message.hex(reinterpret_cast<std::uintptr_t>(address) -
              reinterpret_cast<std::uintptr_t>(info.AllocationBase));
  message << " (" << path << ")";
}

}  // namespace poolalloc::internal
