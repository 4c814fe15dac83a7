// The resident set follows the live set, not the historical peak: after 1 GiB of small blocks
// is allocated, touched and freed, the memory goes back to the system, with malloc_trim(0)
// (everything it can) and without it (decay gives it back within two periods).
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "rss_workloads.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

// Allocates `total` bytes in blocks of 64 B to 1 KiB (sizes drawn from `seed`), writes one word
// in each (which touches every page, as the blocks are packed), then frees them in an order
// unlike the allocation order. Returns the resident set measured while everything was live.
size_t allocate_touch_and_free(size_t total, uint64_t seed) {
  constexpr size_t kMinSize = 64;
  constexpr size_t kMaxSize = 1024;
  PointerArray blocks(total / kMinSize);
  EXPECT_NE(blocks.data(), nullptr);
  if (blocks.data() == nullptr) return 0;
  std::mt19937_64 rng(seed);
  size_t count = 0;
  for (size_t allocated = 0; allocated < total; ++count) {
    const size_t size = kMinSize + rng() % (kMaxSize - kMinSize + 1);
    auto* p = static_cast<uintptr_t*>(malloc(size));
    if (p == nullptr) {
      ADD_FAILURE() << "malloc failed after " << allocated / kMiB << " MiB";
      break;
    }
    *p = reinterpret_cast<uintptr_t>(p);
    blocks.data()[count] = p;
    allocated += size;
  }
  const size_t peak = resident_bytes();
  // Free the odd-numbered blocks first, then the even ones: spans empty only in the second pass.
  size_t damaged = 0;
  for (size_t start : {size_t{1}, size_t{0}}) {
    for (size_t i = start; i < count; i += 2) {
      auto* p = static_cast<uintptr_t*>(blocks.data()[i]);
      if (*p != reinterpret_cast<uintptr_t>(p)) ++damaged;
      free(p);
    }
  }
  EXPECT_EQ(damaged, 0u);
  return peak;
}

TEST(ResidentSet, FallsBackAfterFreeAndTrim) {
  const uint64_t seed = poolalloc_test::test_seed(42);
  const size_t before = resident_bytes();
  const size_t peak = allocate_touch_and_free(kGiB, seed);
  EXPECT_GT(peak, before + kGiB / 2) << "the blocks were not touched; the test measures nothing";
  const int released = malloc_trim(0);
  EXPECT_TRUE(released == 0 || released == 1);
  const size_t after = resident_bytes();
  EXPECT_LT(after, before + 16 * kMiB)
      << "RSS " << before / kMiB << " MiB before, " << peak / kMiB << " MiB at the peak, "
      << after / kMiB << " MiB after freeing everything and malloc_trim(0)";
}

// tuning.md: after a peak, RSS is back to the live set plus 8 MiB within two decay periods
// (the default's 2 s) without the program calling anything, in a program that runs threads of its
// own; right after the frees the central stacks and the retained spans still hold some.
TEST(ResidentSet, FallsBackWithinTwoPeriodsOfTheFreesWithoutTrim) {
  const ThreadOfItsOwn companion;
  ASSERT_TRUE(decay_thread_started());
  const uint64_t seed = poolalloc_test::test_seed(42);
  const size_t before = resident_bytes();
  const size_t peak = allocate_touch_and_free(kGiB, seed);
  const auto freed_at = std::chrono::steady_clock::now();
  EXPECT_GT(peak, before + kGiB / 2) << "the blocks were not touched; the test measures nothing";
  const size_t freed = resident_bytes();
  std::this_thread::sleep_until(freed_at + std::chrono::seconds(2));
  const size_t after = resident_bytes();
  EXPECT_LT(after, before + 8 * kMiB)
      << "RSS " << before / kMiB << " MiB before, " << peak / kMiB << " MiB at the peak, "
      << freed / kMiB << " MiB after freeing everything, " << after / kMiB
      << " MiB two periods later (no trim)";
}

// The memory given back can be allocated again: a second round reaches about the same peak.
TEST(ResidentSet, SecondRoundReusesTheMemory) {
  const uint64_t seed = poolalloc_test::test_seed(42);
  const size_t before = resident_bytes();
  const size_t first_peak = allocate_touch_and_free(kGiB / 4, seed);
  const size_t second_peak = allocate_touch_and_free(kGiB / 4, seed);
  EXPECT_LT(second_peak, first_peak + 32 * kMiB)
      << "peaks " << first_peak / kMiB << " and " << second_peak / kMiB << " MiB (from "
      << before / kMiB << " MiB)";
}

}  // namespace
}  // namespace malloc_test
