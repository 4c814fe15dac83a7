// A program that ends with ExitProcess (docs/statistics.md): no statistics table, whatever
// POOLALLOC_STATS says, and the process's exit code is the one it gave.
#include <poolalloc/poolalloc.h>
#include <windows.h>

int main() {
  poolalloc_free(poolalloc_malloc(100));
  ExitProcess(0);
}
