// Workload 1, churn: OBJECTS blocks of SIZE bytes (10,000 x 64 B) allocated, then freed in a
// random order (a permutation computed once, before the clock matters), ROUNDS times. This is
// the benchmark of the object-pool tutorial, through malloc/free.
#include <cstdlib>
#include <vector>

#include "common.hpp"

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long objects = args.get("objects", 10000, 10000, 10000);
  const long size = args.get("size", 64, 64, 64);
  const long rounds = args.get("rounds", 20, 300, 2500);

  std::vector<long> order(static_cast<std::size_t>(objects));
  for (long i = 0; i < objects; ++i) order[static_cast<std::size_t>(i)] = i;
  wl::Rng rng(1);
  for (long i = objects - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)],
              order[rng.below(static_cast<std::uint64_t>(i + 1))]);

  std::vector<long*> blocks(static_cast<std::size_t>(objects));
  std::uint64_t checksum = 0;
  for (long r = 0; r < rounds; ++r) {
    for (long i = 0; i < objects; ++i) {
      auto* p = static_cast<long*>(wl::malloc(static_cast<std::size_t>(size)));
      if (!p) return 1;
      *p = i + r;
      blocks[static_cast<std::size_t>(i)] = p;
    }
    wl::sink(blocks[0]);
    for (long i : order) {
      long* p = blocks[static_cast<std::size_t>(i)];
      checksum = checksum * 31 + static_cast<std::uint64_t>(*p);
      wl::free(p);
    }
  }
  wl::print_checksum("churn", checksum);
}
