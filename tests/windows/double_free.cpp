// A double free at the default options, in a program linked with libpoolalloc-debug.a: its report
// names the call sites. The frees are in a function of this file's own, static and never inlined.
// Built stripped (windows_double_free_stripped: no symbol table), every call site is the module
// and the offset in it, as "windows_double_free_stripped.exe+0x1f". Built with -Wl,-x
// (windows_double_free_local: a symbol table without local symbols), main keeps its name and the
// static function, which has no symbol, is the module and the offset too, never the name of the
// function whose symbol comes before it.
#include <poolalloc/poolalloc.h>

#include "opaque_pointer.hpp"

namespace {

[[gnu::noinline]] void free_twice(void* block) {
  poolalloc_free(block);
  poolalloc_free(opaque(block));
}

}  // namespace

int main() {
  free_twice(poolalloc_malloc(24));
  return 0;
}
