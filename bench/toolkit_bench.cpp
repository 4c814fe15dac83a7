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

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "churn.hpp"

namespace {

using churn_workload::churn;
using churn_workload::Entity;
using churn_workload::kEntities;

void churn_pool_spawn_despawn(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  churn(
      state, [&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
}

void churn_new_delete(benchmark::State& state) {
  churn(
      state, [](std::uint32_t id) { return new Entity(id); }, [](Entity* e) { delete e; });
}

void churn_fixed_pool(benchmark::State& state) {
  poolalloc::FixedPool pool(sizeof(Entity), kEntities);
  churn(
      state, [&](std::uint32_t) { return pool.allocate(); },
      [&](void* block) { pool.deallocate(block); });
}

void churn_malloc_free(benchmark::State& state) {
  churn(
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
