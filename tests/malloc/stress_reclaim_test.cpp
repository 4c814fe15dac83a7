// Blocks reclaimed from thread caches while their owners run: malloc_trim(0) and decay take the
// blocks of other threads' bins without stopping them (thread_cache.cpp, reclaim_caches). Worker
// threads, more of them than cores so that they are preempted anywhere in malloc, allocate and
// free blocks of a few classes, each filled with a pattern of its holder; another thread calls
// malloc_trim(0) all along. A block handed to two holders at once (the owner's pop and a refill
// served from the spans the reclaimer gave it back to) has its pattern overwritten by the second
// and is caught when the first checks it.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kWorkers = 6;
constexpr unsigned kRounds = 10000;

struct Held {
  uint64_t* words;
  size_t count;
};

uint64_t pattern(unsigned worker, const void* block, size_t word) {
  return (uint64_t{worker} << 56) ^ reinterpret_cast<uintptr_t>(block) ^
         (word * 0x9e3779b97f4a7c15);
}

// One worker: rounds of a random number of blocks (so that its bins fill, overflow and run
// empty) of sizes from three classes, freed in a random order after a check of every word.
// Returns how many blocks were found overwritten.
uint64_t work(unsigned worker, uint64_t seed) {
  std::mt19937_64 rng(seed + worker * 7919);
  std::vector<Held> held;
  uint64_t damaged = 0;
  for (unsigned round = 0; round < kRounds; ++round) {
    const size_t blocks = 1 + rng() % 96;
    for (size_t i = 0; i < blocks; ++i) {
      static constexpr size_t kSizes[] = {48, 256, 3072};
      const size_t size = kSizes[rng() % 3];
      auto* words = static_cast<uint64_t*>(malloc(opaque(size)));
      if (words == nullptr) continue;
      const size_t count = size / sizeof(uint64_t);
      for (size_t w = 0; w < count; ++w) words[w] = pattern(worker, words, w);
      held.push_back({words, count});
    }
    for (size_t i = held.size(); i > 1; --i) std::swap(held[i - 1], held[rng() % i]);
    // Keep a few across rounds, so that frees and mallocs interleave in the bins.
    const size_t keep = rng() % 8;
    while (held.size() > keep) {
      const Held block = held.back();
      held.pop_back();
      for (size_t w = 0; w < block.count; ++w)
        if (block.words[w] != pattern(worker, block.words, w)) {
          ++damaged;
          break;
        }
      free(block.words);
    }
  }
  for (const Held& block : held) free(block.words);
  return damaged;
}

uint64_t run_workers_while(void (*reclaim)()) {
  const uint64_t seed = poolalloc_test::test_seed(1);
  std::atomic<uint64_t> damaged{0};
  std::atomic<unsigned> running{kWorkers};
  std::vector<std::thread> workers;
  for (unsigned worker = 0; worker < kWorkers; ++worker)
    workers.emplace_back([&, worker] {
      damaged += work(worker, seed);
      running.fetch_sub(1);
    });
  while (running.load() != 0) reclaim();
  for (std::thread& thread : workers) thread.join();
  return damaged.load();
}

TEST(StressReclaim, MallocTrimWhileOwnersAllocate) {
  EXPECT_EQ(run_workers_while([] { malloc_trim(0); }), 0u);
}

// With POOLALLOC_DECAY_MS=0 (set for this test), every few slow paths of any thread run a decay
// step, which reclaims the caches of threads that ran no slow path since the step before: the
// workers reclaim from one another.
TEST(StressReclaim, DecayWhileOwnersAllocate) {
  EXPECT_EQ(run_workers_while([] {
              void* p = malloc(opaque(40000));  // past the pools: no cache, a cheap spin
              free(p);
              std::this_thread::yield();
            }),
            0u);
}

}  // namespace
}  // namespace malloc_test
