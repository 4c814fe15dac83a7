// A game's level change: the whole world freed, a new one allocated right after. At the default
// options the pools keep the spans that the frees empty (the decay thread gives back what is not
// taken again, later and on its own thread), so the new level takes its memory without a page
// fault and the frees make no system call (tuning.md, "What a call may cost").
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "test_seed.hpp"

namespace malloc_test {
namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// A level of 96 MiB (more than the 64 MiB of empty spans that the pools keep for reuse without the
// decay thread) of objects of 16-256 bytes, each written whole, into `objects` (reserved by the
// caller: its own pages would count).
void load_level(std::mt19937_64& rng, std::vector<void*>& objects) {
  for (size_t bytes = 0; bytes < (size_t{96} << 20);) {
    const size_t size = 16 + rng() % 241;
    void* p = malloc(size);
    memset(p, 0x5a, size);
    objects.push_back(p);
    bytes += size;
  }
}

TEST(LevelChange, TheNextLevelReusesThePagesOfTheLastWithoutAPageFault) {
  std::mt19937_64 rng(poolalloc_test::test_seed(7));
  std::vector<void*> level;
  level.reserve(size_t{96} << 20 >> 4);
  load_level(rng, level);
  // The first change touches the pools' own metadata for the first time (the central stacks'
  // slots, the spans' bitmaps): not measured.
  for (int change = 0; change < 3; ++change) {
    const long before = minor_faults();
    for (void* p : level) free(p);
    level.clear();
    load_level(rng, level);
    const long faults = minor_faults() - before;
    if (change == 0) continue;
    // 96 MiB faulted in again would be 24,576 faults; the few left (under 1 %) are the pages of
    // spans that the level's new size mix needs beyond the last one's.
    EXPECT_LT(faults, 256) << "level change " << change << ": " << faults << " page faults";
  }
  for (void* p : level) free(p);
}

}  // namespace
}  // namespace malloc_test
