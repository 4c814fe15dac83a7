// Pool<T>'s fast paths in the anchors' churn, for tests/toolkit/pair_instructions.sh, which
// counts their instructions under callgrind: `pool_churn_pairs ROUNDS` spawns 10,000 objects of
// 64 bytes into a pool created for them, then despawns them in one random order (a fixed seed),
// ROUNDS times. From the second round every spawn and despawn takes the fast path.
#include <poolalloc/object_pool.hpp>

#include "churn_entity.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

using churn_workload::Entity;
constexpr int kObjects = 10'000;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const long rounds = std::atol(argv[1]);
  std::vector<int> order(kObjects);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(2024));
  poolalloc::Pool<Entity> pool(kObjects);
  std::vector<Entity*> live(kObjects);
  for (long round = 0; round < rounds; ++round) {
    for (int i = 0; i < kObjects; ++i) live[i] = pool.spawn(static_cast<std::uint32_t>(i));
    // Keeps the spawns from being merged into the despawns (as benchmark::ClobberMemory).
    asm volatile("" : : "r"(live.data()) : "memory");
    for (int i : order) pool.despawn(live[i]);
  }
  return pool.size() == 0 ? 0 : 1;
}
