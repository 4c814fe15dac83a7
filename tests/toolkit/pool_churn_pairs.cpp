// Pool<T>'s fast paths in the anchors' churn, for tests/toolkit/pool_churn_instructions.sh, which
// counts their instructions under callgrind: `pool_churn_pairs ROUNDS` spawns 10,000 objects of
// 64 bytes into a pool created for them, then despawns them in one random order (a fixed seed),
// ROUNDS times. From the second round every spawn and despawn takes the fast path.
#include <poolalloc/object_pool.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

constexpr int kObjects = 10'000;

// The anchors' entity (bench/churn.hpp): 64 bytes, built field by field.
struct Entity {
  explicit Entity(std::uint32_t entity_id) : id(entity_id) {}
  float position[3] = {};
  float velocity[3] = {1, 0, 0};
  float orientation[4] = {0, 0, 0, 1};
  float health = 100;
  std::uint32_t id;
  std::uint32_t flags = 0;
  std::uint32_t parent = 0;
  std::uint32_t components[2] = {};
};
static_assert(sizeof(Entity) == 64);

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
