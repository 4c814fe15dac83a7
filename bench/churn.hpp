// The object-pool tutorial's churn, shared by the toolkit's benchmarks (toolkit_bench.cpp,
// toolkit_anchors.cpp): kEntities entities of 64 bytes created, then destroyed in one random order
// (a permutation computed once), again and again.
#pragma once

#include <benchmark/benchmark.h>

#include "churn_entity.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace churn_workload {

inline constexpr int kEntities = 10'000;

inline const std::vector<int>& random_order() {
  static const std::vector<int> order = [] {
    std::vector<int> indices(kEntities);
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), std::mt19937(2024));
    return indices;
  }();
  return order;
}

// make(id) creates an entity and returns what free() takes to destroy it; items are pairs.
template <class Make, class Free>
void churn(benchmark::State& state, Make make, Free free) {
  std::vector<decltype(make(0u))> live(kEntities);
  const std::vector<int>& order = random_order();
  for (auto _ : state) {
    for (int i = 0; i < kEntities; ++i) live[i] = make(static_cast<std::uint32_t>(i));
    benchmark::DoNotOptimize(live.data());
    benchmark::ClobberMemory();
    for (int i : order) free(live[i]);
  }
  state.SetItemsProcessed(state.iterations() * kEntities);
}

}  // namespace churn_workload
