// A double free at the default options, in a program linked with libpoolalloc-debug.a: its report
// names the call sites. Built stripped (windows_double_free_stripped: no symbol table), whose
// call sites are the module and the offset in it, as "windows_double_free_stripped.exe+0x1f".
#include <poolalloc/poolalloc.h>

#include "opaque_pointer.hpp"

int main() {
  void* block = poolalloc_malloc(24);
  poolalloc_free(block);
  poolalloc_free(opaque(block));
  return 0;
}
