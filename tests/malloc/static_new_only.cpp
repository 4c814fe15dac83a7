// A game as most are written: containers, new and delete, and never a word of malloc or free.
// Linked with libpoolalloc.a, it must still get poolalloc's malloc, which libc (strdup here)
// and every shared library call: the archive's objects come only for symbols the program
// leaves undefined, and this program names none of the C API's.
//
// poolalloc_owns is referenced weakly, so that naming it does not pull the C API's object
// into the link by itself: it is null when that object was left out. Exits 0 when all holds.
#include <string.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "poolalloc/poolalloc.h"

#pragma weak poolalloc_owns

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "static_new_only: %s\n", what);
    ++g_failures;
  }
}

}  // namespace

int main() {
  if (poolalloc_owns == nullptr) {
    std::fprintf(stderr,
                 "static_new_only: the archive's C API (malloc, poolalloc_owns) was not "
                 "linked: glibc keeps malloc\n");
    return 1;
  }
  auto numbers = std::make_unique<std::vector<int>>(100, 7);
  check(poolalloc_owns(numbers.get()) != 0, "operator new did not use the pools");
  check(poolalloc_owns(numbers->data()) != 0, "std::vector's storage is not pooled");
  std::string text(300, 'x');
  check(poolalloc_owns(text.data()) != 0, "std::string's storage is not pooled");
  // strdup allocates with malloc inside libc: the linked-in malloc must be the one it reaches.
  // (Left unfreed: freeing it would name free.)
  char* copy = strdup(text.c_str());
  check(copy != nullptr && poolalloc_owns(copy) != 0,
        "libc's strdup did not reach poolalloc's malloc");
  return g_failures == 0 ? 0 : 1;
}
