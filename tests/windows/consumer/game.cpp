// A game's executable linked with an installed libpoolalloc.a (tests/windows/install.sh): its
// news are the pools', and the statistics count them. Exits with 0 when they are.
#include <poolalloc/poolalloc.h>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
  struct Monster {
    float x = 0, y = 0;
    int health = 100;
  };
  constexpr int count = 1000;
  poolalloc_stats before{};
  poolalloc_get_stats(&before);
  std::vector<std::unique_ptr<Monster>> monsters;
  for (int i = 0; i < count; ++i) monsters.push_back(std::make_unique<Monster>());
  for (const auto& monster : monsters) {
    if (!poolalloc_owns(monster.get())) {
      std::fprintf(stderr, "a monster at %p is not the pools'\n",
                   static_cast<void*>(monster.get()));
      return 1;
    }
  }
  poolalloc_stats after{};
  poolalloc_get_stats(&after);
  const auto pooled =
      static_cast<unsigned long long>(after.pooled_requests - before.pooled_requests);
  std::printf("%d monsters, %llu pooled requests\n", count, pooled);
  return pooled >= count ? 0 : 1;
}
