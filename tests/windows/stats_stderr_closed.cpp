// A program that closes its stderr before it exits (docs/windows.md, "What Windows leaves out"):
// with POOLALLOC_STATS_FILE set, the statistics table of POOLALLOC_STATS still reaches the file.
#include <poolalloc/poolalloc.h>

#include <cstdio>

int main() {
  void* block = poolalloc_malloc(100);
  poolalloc_free(block);
  return std::fclose(stderr) == 0 ? 0 : 1;
}
