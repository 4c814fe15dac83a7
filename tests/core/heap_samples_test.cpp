// The heap profile's records (src/heap_samples.cpp): every sampled block recorded is found again
// at its free, whatever the order of records and frees and however the tables grew, so that the
// in-use figures come back to exactly nothing. A fixed seed, printed.
#include "heap_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_set>
#include <vector>

#include "sample_distance.hpp"
#include "sampling_math.hpp"
#include "size_classes.hpp"
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
          record_sample(reinterpret_cast<const void*>(address), 256, 65536, 0, stack, 0, totals));
      live.push_back(address);
    } else {
      const std::size_t i = random() % live.size();
      ASSERT_EQ(forget_sample(reinterpret_cast<const void*>(live[i]), true), Forgotten::kForgotten)
          << "seed " << seed;
      is_live.erase(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (const std::uintptr_t address : live)
    ASSERT_EQ(forget_sample(reinterpret_cast<const void*>(address), true), Forgotten::kForgotten)
        << "seed " << seed;
  EXPECT_FALSE(sample_records_hold_blocks());
  EXPECT_EQ(inuse_bytes(), 0) << "seed " << seed;
}

CapturedStack one_frame_stack() {
  CapturedStack stack{};
  stack.raw[0] = reinterpret_cast<void*>(0x1000);
  stack.depth = 1;
  return stack;
}

// Records `block` as a sample of a request of `size` bytes served at its class's size, whose free
// may keep it as a spare.
void record_spareable(std::uintptr_t block, std::size_t size) {
  CapturedStack stack = one_frame_stack();
  SampleTotals totals{};
  ASSERT_TRUE(record_sample(reinterpret_cast<const void*>(block), size, 65536, class_of(size) + 1,
                            stack, 0, totals));
}

// The spare that a sample of `size` bytes takes, recorded, or nullptr.
void* sample_in_spare(std::size_t size) {
  CapturedStack stack = one_frame_stack();
  SampleTotals totals{};
  bool recorded = false;
  void* block = record_sample_in_spare(class_of(size), size, 65536, stack, 0, totals, recorded);
  EXPECT_EQ(recorded, block != nullptr);
  return block;
}

const void* at(std::uintptr_t address) {
  return reinterpret_cast<const void*>(address);
}

// Empties the spares, so that each test starts and ends without any.
std::uint32_t take_all_spares() {
  void* blocks[kMostSpareBlocks];
  return take_all_spare_sample_blocks(blocks, true);
}

// profiling.md: an allocation of `size` bytes is sampled with the chance 1 - e^(-size/mean)
// whatever came before it; that is, the distance is below `size` with that chance. Small means
// and sizes, where whole bytes matter most (200,000 draws: the fractions' spread is about 0.001).
TEST(HeapSamples, AnAllocationIsSampledWithTheChanceOneMinusEToTheMinusSizeOverTheMean) {
  std::uint64_t random = poolalloc_test::test_seed(26) | 1;  // xorshift: never 0
  for (const std::int64_t mean : {1, 4, 100}) {
    g_sample_mean.store(mean);
    std::vector<std::int64_t> distances(200000);
    for (std::int64_t& distance : distances) distance = draw_sample_distance(random);
    for (const std::int64_t size : {1, 2, 3, 16, 100}) {
      const auto below = std::count_if(distances.begin(), distances.end(),
                                       [size](std::int64_t distance) { return distance < size; });
      EXPECT_NEAR(static_cast<double>(below) / static_cast<double>(distances.size()),
                  -std::expm1(-static_cast<double>(size) / static_cast<double>(mean)), 0.006)
          << "size " << size << ", mean " << mean;
    }
  }
  g_sample_mean.store(0);
}

TEST(HeapSamples, AFreedSampledBlockWaitsForTheNextSampleOfItsClass) {
  record_spareable(0x40000, 100);
  EXPECT_EQ(forget_sample(at(0x40000), true), Forgotten::kKeptAsSpare);
  EXPECT_TRUE(sample_records_hold_blocks());
  EXPECT_EQ(sample_in_spare(5000), nullptr);
  EXPECT_EQ(sample_in_spare(100), at(0x40000));
  EXPECT_EQ(sample_in_spare(100), nullptr);
  // The spare is now the live sample of the request that took it.
  EXPECT_EQ(forget_sample(at(0x40000), false), Forgotten::kForgotten);
  EXPECT_FALSE(sample_records_hold_blocks());
}

TEST(HeapSamples, AReallocatedSampledBlockIsForgottenNotKept) {
  record_spareable(0x40000, 100);
  EXPECT_EQ(forget_sample(at(0x40000), false), Forgotten::kForgotten);
  EXPECT_EQ(sample_in_spare(100), nullptr);
}

TEST(HeapSamples, SpareBlocksAreAtMostTheirCountAndTheirBytes) {
  static_assert(kMostSpareBlocks == 64 && kMostSpareBytes == 1024 * 1024,
                "docs/profiling.md gives the room for spare blocks: 64 blocks and 1 MiB in all");
  // 4 KiB blocks: the count bounds them.
  for (std::uintptr_t i = 0; i <= kMostSpareBlocks; ++i)
    record_spareable(0x100000 + i * 0x1000, 4096);
  for (std::uintptr_t i = 0; i <= kMostSpareBlocks; ++i)
    EXPECT_EQ(forget_sample(at(0x100000 + i * 0x1000), true),
              i < kMostSpareBlocks ? Forgotten::kKeptAsSpare : Forgotten::kForgotten);
  EXPECT_EQ(take_all_spares(), kMostSpareBlocks);
  // 32 KiB blocks: the bytes do.
  const std::uintptr_t fit = kMostSpareBytes / class_size(class_of(32768));
  for (std::uintptr_t i = 0; i <= fit; ++i) record_spareable(0x1000000 + i * 0x8000, 32768);
  for (std::uintptr_t i = 0; i <= fit; ++i)
    EXPECT_EQ(forget_sample(at(0x1000000 + i * 0x8000), true),
              i < fit ? Forgotten::kKeptAsSpare : Forgotten::kForgotten);
  EXPECT_EQ(take_all_spares(), fit);
  EXPECT_FALSE(sample_records_hold_blocks());
}

// A thread keeps its last sample's estimates for its next one of the same size at the same mean:
// a sample of another size, or at another mean, is estimated anew.
TEST(HeapSamples, EachSampleIsEstimatedAtItsOwnSizeAndMean) {
  const struct {
    std::size_t size;
    std::int64_t mean;
  } samples[] = {{256, 65536}, {256, 65536}, {4096, 65536},
                 {4096, 1024}, {4096, 1024}, {256, 65536}};
  CapturedStack stack = one_frame_stack();
  SampleTotals totals{};
  std::uintptr_t address = 0x2000000;
  ASSERT_TRUE(record_sample(at(address), 64, 65536, 0, stack, 0, totals));
  for (const auto& sample : samples) {
    const std::int64_t before = totals.alloc_bytes;
    address += 0x10000;
    ASSERT_TRUE(record_sample(at(address), sample.size, sample.mean, 0, stack, 0, totals));
    const double size = static_cast<double>(sample.size);
    EXPECT_EQ(totals.alloc_bytes - before,
              std::llround(size / chance_of_sample(size / static_cast<double>(sample.mean))))
        << sample.size << " bytes at a mean of " << sample.mean;
  }
  for (; address >= 0x2000000; address -= 0x10000)
    EXPECT_EQ(forget_sample(at(address), false), Forgotten::kForgotten);
  EXPECT_FALSE(sample_records_hold_blocks());
}

TEST(HeapSamplesDeathTest, ASpareBlockFreedAgainIsReportedAsADoubleFree) {
  record_spareable(0x40000, 100);
  ASSERT_EQ(forget_sample(at(0x40000), true), Forgotten::kKeptAsSpare);
  EXPECT_DEATH(forget_sample(at(0x40000), true),
               "^poolalloc: free\\(0x40000\\): double free of the 112-byte block of a "
               "heap-profile sample\n");
  EXPECT_DEATH(forget_sample(at(0x40000), false), "realloc\\(0x40000\\): double free");
  take_all_spares();
}

}  // namespace
}  // namespace poolalloc::internal
