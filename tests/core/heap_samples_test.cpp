// The heap profile's records (src/heap_samples.cpp): every sampled block recorded is found again
// at its free, whatever the order of records and frees and however the tables grew, so that the
// in-use figures come back to exactly nothing. A fixed seed, printed.
#include "heap_samples.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_set>
#include <vector>

#include "test_seed.hpp"

namespace poolalloc::internal {
namespace {

std::int64_t inuse_bytes() {
  SampleSnapshot snapshot = take_sample_snapshot(false);
  EXPECT_TRUE(snapshot.taken);
  std::int64_t total = 0;
  for (std::uint32_t i = 0; i < snapshot.count; ++i) total += snapshot.stacks[i].inuse_bytes;
  release_sample_snapshot(snapshot);
  return total;
}

TEST(HeapSamples, EveryRecordedBlockIsFoundAtItsFreeInAnyOrder) {
  const std::uint64_t seed = poolalloc_test::test_seed(25);
  std::mt19937_64 random(seed);
  std::vector<std::uintptr_t> live;  // to pick one at random
  std::unordered_set<std::uintptr_t> is_live;
  CapturedStack stack{};
  stack.raw[0] = reinterpret_cast<void*>(0x1000);
  stack.raw[1] = reinterpret_cast<void*>(0x2000);
  SampleTotals totals{};
  for (int round = 0; round < 200000; ++round) {
    if (live.empty() || random() % 3 != 0) {
      // Addresses that collide in the table's low bits, as glibc's do.
      const std::uintptr_t address = 0x10000 + (random() % (1 << 20)) * 16;
      if (!is_live.insert(address).second) continue;
      stack.depth = 1 + random() % 2;
      stack.recorded_index = 0;  // a stack captured anew
      ASSERT_TRUE(
          record_sample(reinterpret_cast<const void*>(address), 256, 65536, stack, 0, totals));
      live.push_back(address);
    } else {
      const std::size_t i = random() % live.size();
      ASSERT_TRUE(forget_sample(reinterpret_cast<const void*>(live[i]))) << "seed " << seed;
      is_live.erase(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (const std::uintptr_t address : live)
    ASSERT_TRUE(forget_sample(reinterpret_cast<const void*>(address))) << "seed " << seed;
  EXPECT_FALSE(samples_live());
  EXPECT_EQ(inuse_bytes(), 0) << "seed " << seed;
}

}  // namespace
}  // namespace poolalloc::internal
