// The sites of names_probe (names_probe.cpp) in named scopes, in a file of their own whose line
// table is in address order: pprof's reading of DWARF names none of them all the same.
#include <cstdlib>

namespace probe_names {
__attribute__((noinline)) void* namespace_site(std::size_t size) {
  return std::malloc(size);
}
}  // namespace probe_names

struct ProbeClass {
  __attribute__((noinline)) static void* member_site(std::size_t size) { return std::malloc(size); }
};

namespace {
__attribute__((noinline)) void* anonymous_site(std::size_t size) {
  return std::malloc(size);
}
}  // namespace

extern void* (*const probe_scope_sites[3])(std::size_t);
void* (*const probe_scope_sites[3])(std::size_t) = {probe_names::namespace_site,
                                                    ProbeClass::member_site, anonymous_site};
