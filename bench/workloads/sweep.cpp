// Workload 2, size sweep: BATCH blocks of SIZE bytes allocated, then freed in allocation order,
// until PAIRS allocate/free pairs have run (the figure of the paper, one size per run). The
// default PAIRS shrinks for the large sizes, where every allocator is slower per pair.
#include <cstdlib>
#include <vector>

#include "common.hpp"

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long size = args.get("size", 64, 64, 64);
  const long batch = args.get("batch", 1000, 1000, 1000);
  const long per_size = size <= 256 ? 10 : size <= 1024 ? 2 : size <= 4096 ? 1 : 0;
  const long pairs = per_size ? args.get("pairs", 20000, 200000 * per_size, 2000000 * per_size)
                              : args.get("pairs", 10000, 50000, 500000);
  const long rounds = pairs / batch;

  std::vector<long*> blocks(static_cast<std::size_t>(batch));
  std::uint64_t checksum = 0;
  for (long r = 0; r < rounds; ++r) {
    for (long i = 0; i < batch; ++i) {
      auto* p = static_cast<long*>(wl::malloc(static_cast<std::size_t>(size)));
      if (!p) return 1;
      *p = i ^ r;
      blocks[static_cast<std::size_t>(i)] = p;
    }
    wl::sink(blocks[0]);
    for (long* p : blocks) {
      checksum += static_cast<std::uint64_t>(*p);
      wl::free(p);
    }
  }
  wl::print_checksum("sweep", checksum);
}
