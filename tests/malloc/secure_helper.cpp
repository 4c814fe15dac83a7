// A program that options_test runs set-group-ID, to see that the library ignores the
// environment where the kernel marks the process secure (AT_SECURE). Linked with libpoolalloc.a,
// since the loader ignores LD_PRELOAD there. Its exit status says what it saw: 1 when AT_SECURE
// is set, plus 2 when malloc(64) came from the pools.
#include <poolalloc/poolalloc.h>
#include <sys/auxv.h>

#include <cstdlib>

int main() {
  void* block = std::malloc(64);
  const int status = (getauxval(AT_SECURE) != 0 ? 1 : 0) | (poolalloc_owns(block) != 0 ? 2 : 0);
  std::free(block);
  return status;
}
