// The fast path, for callgrind: WARMUP and then PAIRS malloc(SIZE)/free pairs in a hot loop.
// scripts/fastpath-instructions.sh runs it at two PAIRS and divides the difference in
// instructions by the difference in pairs: the instructions of one pair, start-up excluded.
#include <cstdlib>

#include "common.hpp"

namespace {

__attribute__((noinline)) std::uint64_t pairs(long n, std::size_t size) {
  std::uint64_t sum = 0;
  for (long i = 0; i < n; ++i) {
    auto* p = static_cast<volatile char*>(std::malloc(size));
    p[0] = static_cast<char>(i);
    sum += static_cast<unsigned char>(p[0]);
    std::free(const_cast<char*>(p));
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long warmup = args.get("warmup", 1000, 10000, 10000);
  const long n = args.get("pairs", 1000, 1000000, 1000000);
  const auto size = static_cast<std::size_t>(args.get("size", 64, 64, 64));
  std::uint64_t checksum = pairs(warmup, size);
  checksum += pairs(n, size);
  wl::print_checksum("fastpath", checksum);
}
