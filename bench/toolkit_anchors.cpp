// The toolkit against what game programmers already include: plf::colony, foonathan/memory,
// Boost.Pool and std::pmr, with new/delete for scale. Every contender runs the same workload:
//   churn:   the object-pool tutorial's 10,000 entities of 64 bytes, each built in its block,
//            then destroyed in a random order (a permutation computed once), again and again;
//            items are spawn+despawn pairs; the loop alone (entities built in an array, nothing
//            freed) for scale;
//   iterate: a walk over the live entities of a container of 10,000 from which a random half
//            was removed, touching each; items are live objects;
//   frame:   1,000 allocations of 8 to 256 bytes (one pseudo-random sequence of sizes, computed
//            once), aligned to alignof(std::max_align_t), then everything given back at once;
//            items are allocations.
//   pmr map: a std::pmr::map<int, int> / std::pmr::unordered_map<int, int> on a memory_resource
//            (PoolResource, or foonathan's memory_pool behind the same virtual calls): 10,000 keys
//            inserted, looked up and erased, each in its own random order (the same keys for both);
//            items are the 30,000 operations.
//   resolve: 1,000,000 handles drawn at random from 100,000 live entities, each resolved (and,
//            in the _read variants, one field of the entity read); items are handles. Against
//            the classic slot map and a packed one, written below.
//   grown:   a growable Pool<T> grown from 64 slots by spawning 100,000 entities (12 chunks, in
//            its reserved range; and with Growth::growable_from_new, from operator new),
//            against one created at the capacity that reached: iterate over, and resolve the
//            handles of, the 50,000 left after a random half was despawned (items are objects),
//            and a spawn burst of 100,000 into the empty pool, cleared after (items are spawns).
// scripts/toolkit-anchors.sh turns the medians into ns per item and ratios to the toolkit's.
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/node_size.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/pmr.hpp>
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
#include <map>
#include <memory_resource>
#include <new>
#include <numeric>
#include <random>
#include <ranges>
#include <unordered_map>
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

// The loop alone, for scale: each entity built in place in an array of 64-byte blocks, nothing
// freed (the pointer is only passed on). What every contender's time holds besides its own
// allocator: the loop, the random order's loads and the entity's constructor.
void churn_loop_alone(benchmark::State& state) {
  struct alignas(Entity) Block {
    std::byte bytes[sizeof(Entity)];
  };
  std::vector<Block> blocks(kEntities);
  churn(
      state, [&](std::uint32_t id) { return build(blocks[id].bytes, id); },
      [](Entity* e) { benchmark::DoNotOptimize(e); });
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

// A walk that needs each object's handle too (to queue an event about it, say): each() gives it,
// where a plain walk calls handle_of per object. Items are live objects.
void iterate_handles_pool_each(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  fill_half([&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
  iterate(state, [&] {
    std::uint64_t sum = 0;
    pool.each([&](poolalloc::Handle<Entity> h, Entity& e) {
      touch(e);
      sum += h.packed();
    });
    benchmark::DoNotOptimize(sum);
  });
}

void iterate_handles_pool_handle_of(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kEntities);
  fill_half([&](std::uint32_t id) { return pool.spawn(id); }, [&](Entity* e) { pool.despawn(e); });
  iterate(state, [&] {
    std::uint64_t sum = 0;
    for (Entity& e : pool) {
      touch(e);
      sum += pool.handle_of(&e).packed();
    }
    benchmark::DoNotOptimize(sum);
  });
}

// colony's handle of an element is its iterator (or pointer): the walk yields it for free.
void iterate_handles_colony(benchmark::State& state) {
  plf::colony<Entity> colony;
  fill_half([&](std::uint32_t id) { return colony.emplace(id); },
            [&](plf::colony<Entity>::iterator e) { colony.erase(e); });
  iterate(state, [&] {
    std::uint64_t sum = 0;
    for (auto it = colony.begin(); it != colony.end(); ++it) {
      touch(*it);
      sum += reinterpret_cast<std::uintptr_t>(&*it);
    }
    benchmark::DoNotOptimize(sum);
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

// ---- resolve -----------------------------------------------------------------------------------

constexpr int kResolveObjects = 100'000;
constexpr int kResolves = 1'000'000;

// The classic slot map: a vector of {generation, value}, the free entries linked through their
// indices; a key is an index and the generation it was made with, which erase() moves on.
template <class V>
class SlotMap {
 public:
  struct Key {
    std::uint32_t index;
    std::uint32_t generation;
  };

  Key insert(const V& value) {
    std::uint32_t index = free_;
    if (index == kNone) {
      index = static_cast<std::uint32_t>(entries_.size());
      entries_.push_back({0, kNone, value});
    } else {
      free_ = entries_[index].next_free;
      entries_[index].value = value;
    }
    return {index, entries_[index].generation};
  }
  void erase(Key key) {
    Entry& entry = entries_[key.index];
    ++entry.generation;
    entry.next_free = free_;
    free_ = key.index;
  }
  V* get(Key key) {
    if (key.index >= entries_.size()) return nullptr;
    Entry& entry = entries_[key.index];
    return entry.generation == key.generation ? &entry.value : nullptr;
  }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Entry {
    std::uint32_t generation;
    std::uint32_t next_free;
    V value;
  };
  std::vector<Entry> entries_;
  std::uint32_t free_ = kNone;
};

// A slot map whose values stay packed in one array (as EnTT's storages, or a slot map with a dense
// array): a key's index picks an entry of {generation, position}, and the value lies at that
// position. Values can so move (erase would move the last into the hole, a compaction) and keys
// stay valid, as Pool<T>'s handles through compact(); resolving is then an entry, and the value
// at an address read from it, as Pool<T>::get's. Only what the resolve workload calls: insert and
// get.
template <class V>
class PackedSlotMap {
 public:
  struct Key {
    std::uint32_t index;
    std::uint32_t generation;
  };

  Key insert(const V& value) {
    const auto index = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back({0, static_cast<std::uint32_t>(values_.size())});
    values_.push_back(value);
    return {index, 0};
  }
  V* get(Key key) {
    if (key.index >= entries_.size()) return nullptr;
    const Entry& entry = entries_[key.index];
    return entry.generation == key.generation ? &values_[entry.position] : nullptr;
  }

 private:
  struct Entry {
    std::uint32_t generation;
    std::uint32_t position;
  };
  std::vector<Entry> entries_;
  std::vector<V> values_;
};

// `count` picks of `keys`, at random (one sequence, fixed seed).
template <class Key>
std::vector<Key> draw(const std::vector<Key>& keys, int count) {
  std::mt19937 random(2024);
  std::uniform_int_distribution<std::size_t> pick(0, keys.size() - 1);
  std::vector<Key> drawn(static_cast<std::size_t>(count));
  for (Key& key : drawn) key = keys[pick(random)];
  return drawn;
}

// get(key) for every key; with Read, one field of each entity found is read too.
template <bool Read, class Key, class Get>
void resolve(benchmark::State& state, const std::vector<Key>& keys, Get get) {
  for (auto _ : state) {
    std::uintptr_t sum = 0;
    for (const Key& key : keys) {
      Entity* e = get(key);
      if constexpr (Read) {
        sum += e->id;
      } else {
        sum += reinterpret_cast<std::uintptr_t>(e);
      }
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

template <bool Read>
void resolve_pool(benchmark::State& state) {
  poolalloc::Pool<Entity> pool(kResolveObjects);
  std::vector<poolalloc::Handle<Entity>> handles;
  for (int i = 0; i < kResolveObjects; ++i) {
    handles.push_back(pool.handle_of(pool.spawn(static_cast<std::uint32_t>(i))));
  }
  resolve<Read>(state, draw(handles, kResolves),
                [&](poolalloc::Handle<Entity> h) { return pool.get(h); });
}

template <bool Read>
void resolve_slot_map(benchmark::State& state) {
  SlotMap<Entity> map;
  std::vector<SlotMap<Entity>::Key> keys;
  for (int i = 0; i < kResolveObjects; ++i) {
    keys.push_back(map.insert(Entity(static_cast<std::uint32_t>(i))));
  }
  resolve<Read>(state, draw(keys, kResolves), [&](SlotMap<Entity>::Key k) { return map.get(k); });
}

template <bool Read>
void resolve_packed_slot_map(benchmark::State& state) {
  PackedSlotMap<Entity> map;
  std::vector<PackedSlotMap<Entity>::Key> keys;
  for (int i = 0; i < kResolveObjects; ++i) {
    keys.push_back(map.insert(Entity(static_cast<std::uint32_t>(i))));
  }
  resolve<Read>(state, draw(keys, kResolves),
                [&](PackedSlotMap<Entity>::Key k) { return map.get(k); });
}

void resolve_pool_get(benchmark::State& state) {
  resolve_pool<false>(state);
}
void resolve_slot_map_get(benchmark::State& state) {
  resolve_slot_map<false>(state);
}
void resolve_packed_slot_map_get(benchmark::State& state) {
  resolve_packed_slot_map<false>(state);
}
void resolve_pool_get_read(benchmark::State& state) {
  resolve_pool<true>(state);
}
void resolve_slot_map_get_read(benchmark::State& state) {
  resolve_slot_map<true>(state);
}
void resolve_packed_slot_map_get_read(benchmark::State& state) {
  resolve_packed_slot_map<true>(state);
}

// ---- grown -------------------------------------------------------------------------------------

constexpr int kGrownObjects = 100'000;

template <poolalloc::Growth kGrowth>
poolalloc::Pool<Entity> grown_pool() {
  poolalloc::Pool<Entity> pool(64, kGrowth);
  for (int i = 0; i < kGrownObjects; ++i) (void)pool.spawn(static_cast<std::uint32_t>(i));
  pool.clear();
  return pool;
}
constexpr auto grown_in_place = grown_pool<poolalloc::Growth::growable>;
constexpr auto grown_from_new = grown_pool<poolalloc::Growth::growable_from_new>;

poolalloc::Pool<Entity> full_size_pool() {
  static const std::size_t capacity = grown_in_place().capacity();
  return poolalloc::Pool<Entity>(capacity, poolalloc::Growth::growable);
}

// Spawns kGrownObjects and despawns a random half (one permutation, fixed seed); returns the
// handles of the others, in a random order.
std::vector<poolalloc::Handle<Entity>> spawn_half(poolalloc::Pool<Entity>& pool) {
  std::vector<poolalloc::Handle<Entity>> handles;
  for (int i = 0; i < kGrownObjects; ++i) {
    handles.push_back(pool.handle_of(pool.spawn(static_cast<std::uint32_t>(i))));
  }
  std::shuffle(handles.begin(), handles.end(), std::mt19937(2024));
  for (int i = 0; i < kGrownObjects / 2; ++i) pool.despawn(handles[i]);
  handles.erase(handles.begin(), handles.begin() + kGrownObjects / 2);
  return handles;
}

template <poolalloc::Pool<Entity> (*Make)()>
void grown_iterate(benchmark::State& state) {
  poolalloc::Pool<Entity> pool = Make();
  (void)spawn_half(pool);
  for (auto _ : state) {
    pool.for_each(touch);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pool.size()));
}

template <poolalloc::Pool<Entity> (*Make)()>
void grown_resolve(benchmark::State& state) {
  poolalloc::Pool<Entity> pool = Make();
  const std::vector<poolalloc::Handle<Entity>> handles = spawn_half(pool);
  resolve<true>(state, handles, [&](poolalloc::Handle<Entity> h) { return pool.get(h); });
}

template <poolalloc::Pool<Entity> (*Make)()>
void grown_spawn_burst(benchmark::State& state) {
  poolalloc::Pool<Entity> pool = Make();
  for (auto _ : state) {
    for (int i = 0; i < kGrownObjects; ++i) {
      benchmark::DoNotOptimize(pool.spawn(static_cast<std::uint32_t>(i)));
    }
    pool.clear();
  }
  state.SetItemsProcessed(state.iterations() * kGrownObjects);
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

// ---- pmr map -----------------------------------------------------------------------------------

constexpr int kMapKeys = 10'000;

// The keys' insertion, lookup and erase orders: three permutations of 0 .. kMapKeys - 1.
const std::vector<std::vector<int>>& map_orders() {
  static const std::vector<std::vector<int>> orders = [] {
    std::mt19937 random(26);
    std::vector<std::vector<int>> result(3, std::vector<int>(kMapKeys));
    for (std::vector<int>& order : result) {
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), random);
    }
    return result;
  }();
  return orders;
}

// A fresh Map on `resource` each iteration: insert, look up and erase every key.
template <class Map>
void pmr_map(benchmark::State& state, std::pmr::memory_resource* resource) {
  const std::vector<std::vector<int>>& orders = map_orders();
  for (auto _ : state) {
    Map map(resource);
    for (int key : orders[0]) map.emplace(key, key);
    long sum = 0;
    for (int key : orders[1]) sum += map.find(key)->second;
    benchmark::DoNotOptimize(sum);
    for (int key : orders[2]) map.erase(key);
  }
  state.SetItemsProcessed(state.iterations() * 3 * kMapKeys);
}

// foonathan's memory_pool behind a std::pmr::memory_resource, as PoolResource is one: nodes from
// the pool (sized for Map's nodes, 64 to its first block as PoolResource's chunks), anything else
// (the buckets of an unordered_map) from new/delete.
template <class Map>
class FoonathanPoolResource final : public std::pmr::memory_resource {
 public:
  FoonathanPoolResource()
      : pool_(poolalloc::node_layout<Map>().size,
              Pool::min_block_size(poolalloc::node_layout<Map>().size, 64)) {}

 private:
  using Pool = foonathan::memory::memory_pool<foonathan::memory::node_pool>;
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (bytes <= pool_.node_size() && alignment <= alignof(std::max_align_t))
      return pool_.allocate_node();
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (bytes <= pool_.node_size() && alignment <= alignof(std::max_align_t))
      return pool_.deallocate_node(p);
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
  Pool pool_;
};

template <class Map>
void pmr_map_pool_resource(benchmark::State& state) {
  poolalloc::PoolResource resource;
  pmr_map<Map>(state, &resource);
}

template <class Map>
void pmr_map_foonathan_memory_pool(benchmark::State& state) {
  FoonathanPoolResource<Map> resource;
  pmr_map<Map>(state, &resource);
}

using PmrMap = std::pmr::map<int, int>;
using PmrUnorderedMap = std::pmr::unordered_map<int, int>;

}  // namespace

BENCHMARK(pmr_map_pool_resource<PmrMap>)->Name("pmr_map_pool_resource");
BENCHMARK(pmr_map_foonathan_memory_pool<PmrMap>)->Name("pmr_map_foonathan_memory_pool");
BENCHMARK(pmr_map_pool_resource<PmrUnorderedMap>)->Name("pmr_unordered_map_pool_resource");
BENCHMARK(pmr_map_foonathan_memory_pool<PmrUnorderedMap>)
    ->Name("pmr_unordered_map_foonathan_memory_pool");

BENCHMARK(churn_pool);
BENCHMARK(churn_fixed_pool);
BENCHMARK(churn_colony);
BENCHMARK(churn_foonathan_memory_pool);
BENCHMARK(churn_boost_pool);
BENCHMARK(churn_boost_object_pool);
BENCHMARK(churn_new_delete);
BENCHMARK(churn_loop_alone);
BENCHMARK(iterate_pool_for_each);
BENCHMARK(iterate_colony);
BENCHMARK(iterate_vector_of_pointers);
BENCHMARK(iterate_handles_pool_each);
BENCHMARK(iterate_handles_pool_handle_of);
BENCHMARK(iterate_handles_colony);
BENCHMARK(resolve_pool_get);
BENCHMARK(resolve_slot_map_get);
BENCHMARK(resolve_packed_slot_map_get);
BENCHMARK(resolve_pool_get_read);
BENCHMARK(resolve_slot_map_get_read);
BENCHMARK(resolve_packed_slot_map_get_read);
BENCHMARK(grown_iterate<grown_in_place>)->Name("grown_iterate_grown");
BENCHMARK(grown_iterate<grown_from_new>)->Name("grown_iterate_grown_from_new");
BENCHMARK(grown_iterate<full_size_pool>)->Name("grown_iterate_full_size");
BENCHMARK(grown_resolve<grown_in_place>)->Name("grown_resolve_grown");
BENCHMARK(grown_resolve<grown_from_new>)->Name("grown_resolve_grown_from_new");
BENCHMARK(grown_resolve<full_size_pool>)->Name("grown_resolve_full_size");
BENCHMARK(grown_spawn_burst<grown_in_place>)->Name("grown_spawn_burst_grown");
BENCHMARK(grown_spawn_burst<grown_from_new>)->Name("grown_spawn_burst_grown_from_new");
BENCHMARK(grown_spawn_burst<full_size_pool>)->Name("grown_spawn_burst_full_size");
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
