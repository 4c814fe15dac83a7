// Does RSS follow the live set? Allocates --mib MiB in blocks of 64 B to 1 KiB, touching each,
// frees them all (odd blocks first, then even ones, so no span empties in the first pass),
// and prints the resident set before, at the peak, after the frees and after malloc_trim(0).
// Not part of the timed suite: its output depends on the allocator (scripts/rss-return.sh).
#include <malloc.h>

#include <cstdio>
#include <vector>

#include "common.hpp"

namespace {

long resident_mib() {
  long pages = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) return -1;
  std::fclose(statm);
  return resident * 4096 / (1024 * 1024);
}

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long total = args.get("mib", 16, 256, 1024) << 20;
  wl::Rng rng(7);
  std::vector<void*> blocks;
  blocks.reserve(static_cast<std::size_t>(total / 64));
  const long before = resident_mib();
  for (long bytes = 0; bytes < total;) {
    const std::size_t size = 64 + rng.below(961);
    auto* block = static_cast<std::size_t*>(std::malloc(size));
    *block = size;
    blocks.push_back(block);
    bytes += static_cast<long>(size);
  }
  const long peak = resident_mib();
  for (std::size_t first : {1, 0})
    for (std::size_t i = first; i < blocks.size(); i += 2) std::free(blocks[i]);
  const long after_free = resident_mib();
  malloc_trim(0);
  std::printf("%ld %ld %ld %ld\n", before, peak, after_free, resident_mib());
}
