// A stripped DLL that links libpoolalloc-debug.a (windows_debug_plugin), for
// double_free_in_dll.cpp: with no symbol table, the reports name its call sites by its export
// table, and a call site in a function it does not export by the module and the offset.
#include <poolalloc/poolalloc.h>

namespace {

// Neither inlined nor left by a tail call (a tail call's site is its caller's).
[[gnu::noinline]] void free_unexported(void* block) {
  poolalloc_free(block);
  asm volatile("" ::: "memory");
}

}  // namespace

extern "C" __declspec(dllexport) void* debug_plugin_allocate() {
  void* block = poolalloc_malloc(24);
  asm volatile("" ::: "memory");
  return block;
}
extern "C" __declspec(dllexport) void debug_plugin_free(void* block) {
  poolalloc_free(block);
  asm volatile("" ::: "memory");
}
extern "C" __declspec(dllexport) void debug_plugin_free_unexported(void* block) {
  free_unexported(block);
  asm volatile("" ::: "memory");
}
