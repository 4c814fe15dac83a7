// The shared library of names_probe (names_probe.cpp), stripped after the link as distributions
// ship their libraries: no DWARF and no .symtab, its exported functions in .dynsym alone.
#include <cstdlib>

__attribute__((noinline, visibility("default"))) void* probe_library_site(std::size_t size) {
  return std::malloc(size);
}
