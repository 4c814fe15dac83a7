// The toolkit's workloads, each next to its baseline:
//   churn:  the object-pool tutorial's 10,000 entities of 64 bytes, destroyed in a random order
//           (a permutation computed once), again and again;
//   sweep:  the paper's test, a batch of blocks of one size allocated and freed, 16 B ... 4 KiB;
//   create: the cost of creating a pool of 1 K and of 10 M blocks.
// items_per_second counts allocate+free pairs (blocks, for create); scripts/toolkit-bench.sh
// turns the medians into ns per pair.
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/object_pool.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace {

constexpr int kEntities = 10'000;

struct Entity {
  explicit Entity(std::uint32_t entity_id) : id(entity_id) {}
  float position[3] = {};
  float velocity[3] = {};
  float orientation[4] = {0, 0, 0, 1};
  float health = 100;
  std::uint32_t id;
  std::uint32_t flags = 0;
  std::uint32_t parent = 0;
  std::uint32_t components[2] = {};
};
static_assert(sizeof(Entity) == 64);

const std::vector<int>& random_free_order() {
  static const std::vector<int> order = [] {
    std::vector<int> indices(kEntities);
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), std::mt19937(2024));
    return indices;
  }();
  return order;
}

template <class T, class Make, class Free>
void churn(benchmark::State& state, Make make, Free free) {
  std::vector<T*> live(kEntities);
  const std::vector<int>& order = random_free_order();
  for (auto _ : state) {
    for (int i = 0; i < kEntities; ++i) live[i] = make(static_cast<std::uint32_t>(i));
    benchmark::DoNotOptimize(live.data());
    benchmark::ClobberMemory();
    for (int i : order) free(live[i]);
  }
  state.SetItemsProcessed(state.iterations() * kEntities);
}

void churn_pool_spawn_despawn(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  churn<Entity>(
      state, [&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
}

void churn_new_delete(benchmark::State& state) {
  churn<Entity>(
      state, [](std::uint32_t id) { return new Entity(id); }, [](Entity* e) { delete e; });
}

void churn_fixed_pool(benchmark::State& state) {
  poolalloc::FixedPool pool(sizeof(Entity), kEntities);
  churn<void>(
      state, [&](std::uint32_t) { return pool.allocate(); },
      [&](void* block) { pool.deallocate(block); });
}

void churn_malloc_free(benchmark::State& state) {
  churn<void>(
      state, [](std::uint32_t) { return std::malloc(sizeof(Entity)); },
      [](void* block) { std::free(block); });
}

constexpr int kSweepBatch = 1'000;

template <class Allocate, class Free>
void sweep(benchmark::State& state, Allocate allocate, Free free) {
  std::vector<void*> batch(kSweepBatch);
  for (auto _ : state) {
    for (void*& block : batch) block = allocate();
    benchmark::DoNotOptimize(batch.data());
    benchmark::ClobberMemory();
    for (void* block : batch) free(block);
  }
  state.SetItemsProcessed(state.iterations() * kSweepBatch);
}

void sweep_fixed_pool(benchmark::State& state) {
  poolalloc::FixedPool pool(static_cast<std::size_t>(state.range(0)), kSweepBatch);
  sweep(
      state, [&] { return pool.allocate(); }, [&](void* block) { pool.deallocate(block); });
}

void sweep_malloc_free(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  sweep(
      state, [=] { return std::malloc(size); }, [](void* block) { std::free(block); });
}

constexpr std::size_t kCreateBlockSize = 16;

// Over caller memory: creation itself, without the cost of getting the memory.
void create_over_caller_memory(benchmark::State& state) {
  const auto blocks = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = blocks * kCreateBlockSize;
  const std::unique_ptr<std::byte[]> memory(new std::byte[bytes]);  // never touched
  poolalloc::FixedPool pool;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pool.create(memory.get(), bytes, kCreateBlockSize, 16));
    pool.destroy();
  }
  state.SetItemsProcessed(state.iterations());
}

// With the pool allocating its memory: adds one operator new and delete (mmap for 10 M blocks).
void create_owned(benchmark::State& state) {
  const auto blocks = static_cast<std::size_t>(state.range(0));
  poolalloc::FixedPool pool;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pool.create(kCreateBlockSize, blocks));
    pool.destroy();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(churn_pool_spawn_despawn);
BENCHMARK(churn_new_delete);
BENCHMARK(churn_fixed_pool);
BENCHMARK(churn_malloc_free);
BENCHMARK(sweep_fixed_pool)->RangeMultiplier(2)->Range(16, 4096);
BENCHMARK(sweep_malloc_free)->RangeMultiplier(2)->Range(16, 4096);
BENCHMARK(create_over_caller_memory)->Arg(1'000)->Arg(10'000'000);
BENCHMARK(create_owned)->Arg(1'000)->Arg(10'000'000);

BENCHMARK_MAIN();
