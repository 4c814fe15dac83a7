// The toolkit against what game programmers already include: plf::colony, foonathan/memory,
// Boost.Pool and std::pmr, with new/delete for scale. Every contender runs the same workload:
//   churn:   the object-pool tutorial's 10,000 entities of 64 bytes, each built in its block,
//            then destroyed in a random order (a permutation computed once), again and again;
//            items are spawn+despawn pairs;
//   iterate: a walk over the live entities of a container of 10,000 from which a random half
//            was removed, touching each; items are live objects;
//   frame:   1,000 allocations of 8 to 256 bytes (one pseudo-random sequence of sizes, computed
//            once), aligned to alignof(std::max_align_t), then everything given back at once;
//            items are allocations.
// scripts/toolkit-anchors.sh turns the medians into ns per item and ratios to the toolkit's.
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/stack_allocator.hpp>

#include <benchmark/benchmark.h>
#include <plf_colony.h>
#include <boost/pool/object_pool.hpp>
#include <boost/pool/pool.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/memory_stack.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <numeric>
#include <random>
#include <ranges>
#include <vector>

#include "churn.hpp"

namespace {

using churn_workload::churn;
using churn_workload::Entity;
using churn_workload::kEntities;
using churn_workload::random_order;

// The raw-block pools get an entity built in each block, as the typed ones build it.
Entity* build(void* block, std::uint32_t id) {
  return ::new (block) Entity(id);
}

void churn_pool(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  churn(
      state, [&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
}

void churn_fixed_pool(benchmark::State& state) {
  poolalloc::FixedPool pool(sizeof(Entity), kEntities);
  churn(
      state, [&](std::uint32_t id) { return build(pool.allocate(), id); },
      [&](Entity* e) { pool.deallocate(e); });
}

void churn_colony(benchmark::State& state) {
  plf::colony<Entity> colony;
  colony.reserve(kEntities);
  churn(
      state, [&](std::uint32_t id) { return colony.emplace(id); },
      [&](plf::colony<Entity>::iterator e) { colony.erase(e); });
}

void churn_foonathan_memory_pool(benchmark::State& state) {
  namespace memory = foonathan::memory;
  memory::memory_pool<memory::node_pool> pool(
      sizeof(Entity),
      memory::memory_pool<memory::node_pool>::min_block_size(sizeof(Entity), kEntities));
  churn(
      state, [&](std::uint32_t id) { return build(pool.allocate_node(), id); },
      [&](Entity* e) { pool.deallocate_node(e); });
}

void churn_boost_pool(benchmark::State& state) {
  boost::pool<> pool(sizeof(Entity), kEntities);
  churn(
      state, [&](std::uint32_t id) { return build(pool.malloc(), id); },
      [&](Entity* e) { pool.free(e); });
}

// destroy() keeps the free list in address order (ordered_free): O(free blocks) a call.
void churn_boost_object_pool(benchmark::State& state) {
  boost::object_pool<Entity> pool(kEntities);
  churn(
      state, [&](std::uint32_t id) { return pool.construct(id); },
      [&](Entity* e) { pool.destroy(e); });
}

void churn_new_delete(benchmark::State& state) {
  churn(
      state, [](std::uint32_t id) { return new Entity(id); }, [](Entity* e) { delete e; });
}

// ---- iterate -----------------------------------------------------------------------------------

void touch(Entity& e) {
  e.position[0] += e.velocity[0];
}

// Spawns kEntities with spawn(id) -> handle, then removes the first half of the random order.
template <class Spawn, class Remove>
void fill_half(Spawn spawn, Remove remove) {
  std::vector<decltype(spawn(0u))> all;
  for (int i = 0; i < kEntities; ++i) all.push_back(spawn(static_cast<std::uint32_t>(i)));
  const std::vector<int>& order = random_order();
  for (int i = 0; i < kEntities / 2; ++i) remove(all[order[i]]);
}

template <class Walk>
void iterate(benchmark::State& state, Walk walk) {
  for (auto _ : state) {
    walk();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * (kEntities / 2));
}

void iterate_pool_for_each(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  fill_half([&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
  iterate(state, [&] { pool.for_each(touch); });
}

// Registered only where Pool<T> is a range.
template <class Pool>
void iterate_pool_range_for(benchmark::State& state) {
  Pool pool(kEntities);
  fill_half([&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
  iterate(state, [&] {
    for (Entity& e : pool) touch(e);
  });
}

void iterate_colony(benchmark::State& state) {
  plf::colony<Entity> colony;
  fill_half([&](std::uint32_t id) { return colony.emplace(id); },
            [&](plf::colony<Entity>::iterator e) { colony.erase(e); });
  iterate(state, [&] {
    for (Entity& e : colony) touch(e);
  });
}

// The same objects as the pool's, reached through a vector of pointers in address order.
void iterate_vector_of_pointers(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  fill_half([&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
  std::vector<Entity*> live;
  pool.for_each([&](Entity& e) { live.push_back(&e); });
  iterate(state, [&] {
    for (Entity* e : live) touch(*e);
  });
}

// ---- frame -------------------------------------------------------------------------------------

constexpr int kFrameAllocations = 1'000;
constexpr std::size_t kFrameBytes = 512 * 1024;  // 1,000 x 256 B and their alignment, twice over
constexpr std::size_t kAlign = alignof(std::max_align_t);

const std::vector<std::size_t>& frame_sizes() {
  static const std::vector<std::size_t> sizes = [] {
    std::mt19937 random(2024);
    std::uniform_int_distribution<std::size_t> size(8, 256);
    std::vector<std::size_t> result(kFrameAllocations);
    for (std::size_t& s : result) s = size(random);
    return result;
  }();
  return sizes;
}

// allocate(size) once per size, then reset().
template <class Allocate, class Reset>
void frame(benchmark::State& state, Allocate allocate, Reset reset) {
  const std::vector<std::size_t>& sizes = frame_sizes();
  for (auto _ : state) {
    for (std::size_t size : sizes) benchmark::DoNotOptimize(allocate(size));
    reset();
  }
  state.SetItemsProcessed(state.iterations() * kFrameAllocations);
}

void frame_frame_allocator(benchmark::State& state) {
  poolalloc::FrameAllocator frame_allocator(kFrameBytes);
  frame(
      state, [&](std::size_t size) { return frame_allocator.allocate(size, kAlign); },
      [&] { frame_allocator.reset(); });
}

void frame_stack_allocator(benchmark::State& state) {
  poolalloc::StackAllocator stack(kFrameBytes);
  const auto bottom = stack.marker();
  frame(
      state, [&](std::size_t size) { return stack.allocate(size, kAlign); },
      [&] { stack.free_to_marker(bottom); });
}

void frame_foonathan_memory_stack(benchmark::State& state) {
  foonathan::memory::memory_stack<> stack(kFrameBytes);
  const auto bottom = stack.top();
  frame(
      state, [&](std::size_t size) { return stack.allocate(size, kAlign); },
      [&] { stack.unwind(bottom); });
}

void frame_pmr_monotonic_buffer(benchmark::State& state) {
  std::vector<std::byte> buffer(kFrameBytes);
  std::pmr::monotonic_buffer_resource resource(buffer.data(), buffer.size(),
                                               std::pmr::null_memory_resource());
  frame(
      state, [&](std::size_t size) { return resource.allocate(size, kAlign); },
      [&] { resource.release(); });
}

}  // namespace

BENCHMARK(churn_pool);
BENCHMARK(churn_fixed_pool);
BENCHMARK(churn_colony);
BENCHMARK(churn_foonathan_memory_pool);
BENCHMARK(churn_boost_pool);
BENCHMARK(churn_boost_object_pool);
BENCHMARK(churn_new_delete);
BENCHMARK(iterate_pool_for_each);
BENCHMARK(iterate_colony);
BENCHMARK(iterate_vector_of_pointers);
BENCHMARK(frame_frame_allocator);
BENCHMARK(frame_stack_allocator);
BENCHMARK(frame_foonathan_memory_stack);
BENCHMARK(frame_pmr_monotonic_buffer);

template <class Pool>
void register_range_for() {
  if constexpr (std::ranges::range<Pool&>) {
    benchmark::RegisterBenchmark("iterate_pool_range_for", iterate_pool_range_for<Pool>);
  }
}

int main(int argc, char** argv) {
  register_range_for<poolalloc::Pool<Entity>>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
