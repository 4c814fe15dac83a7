// The program whose heap profile the tests of profile_names_test.cpp read: allocation sites in
// the places where `go tool pprof` 1.19 names nothing when it reads the program's DWARF itself.
// It turns sampling on with poolalloc_profile_sample(512 KiB), allocates 16 MiB in blocks of 64
// bytes at each site, keeps them and dumps the profile to `call.pb`; it exits with 1 when the
// dump fails.
//   probe_unit_site                          a global function of this file, whose line table
//                                            starts with Shape's inline virtual functions, which
//                                            the linker places above the file's other code
//   probe_names::namespace_site              in a named namespace (names_probe_scopes.cpp)
//   ProbeClass::member_site                  a static member function
//   (anonymous namespace)::anonymous_site    in an anonymous namespace
//   probe_library_site                       in a stripped shared library
#include <cstdlib>
#include <cstring>
#include <vector>

#include "poolalloc/poolalloc.h"

void* probe_library_site(std::size_t size);
extern void* (*const probe_scope_sites[3])(std::size_t);

// Defined in the class, so out of line in a section of their own (COMDAT) that the compiler
// emits ahead of this file's other functions.
struct Shape {
  virtual ~Shape() = default;
  virtual int corners() const { return 0; }
};
struct Square : Shape {
  int corners() const override { return 4; }
};

__attribute__((noinline)) void* probe_unit_site(std::size_t size) {
  return std::malloc(size);
}

namespace {

void allocate(std::vector<void*>& kept, void* (*site)(std::size_t)) {
  constexpr std::size_t kBytes = std::size_t{16} << 20;
  constexpr std::size_t kSize = 64;
  for (std::size_t i = 0; i < kBytes / kSize; ++i) {
    void* block = site(kSize);
    std::memset(block, 1, 8);
    kept.push_back(block);
  }
}

}  // namespace

int main(int argc, char**) {
  poolalloc_profile_sample(512 * 1024);
  std::vector<void*> kept;
  for (void* (*site)(std::size_t) : {probe_unit_site, probe_scope_sites[0], probe_scope_sites[1],
                                     probe_scope_sites[2], probe_library_site})
    allocate(kept, site);
  Shape* shape = argc > 1 ? new Shape : new Square;  // uses the virtual functions
  const int corners = shape->corners();
  delete shape;
  return poolalloc_profile_dump("call.pb") == 0 && corners == 4 ? 0 : 1;
}
