// Tag budgets (poolalloc_tag_set_budget), and the tags' rows in the statistics table and in the
// toolkit's print_budgets(). A budget's
// callback is called once each time its tag goes over it, in the malloc that took it there; it
// may allocate. Each test registers tags of its own, and reads the figures after popping them.
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "poolalloc/fixed_pool.hpp"
#include "poolalloc/poolalloc.h"
#include "poolalloc/tags.hpp"
#include "poolalloc/tracking.hpp"
#include "run_preloaded.hpp"

namespace {

// What the callbacks saw.
struct Calls {
  int count = 0;
  int id = -1;
  std::uint64_t out_bytes = 0;
  std::uint64_t budget_bytes = 0;
};

void record(int id, std::uint64_t out_bytes, std::uint64_t budget_bytes, void* context) {
  Calls& calls = *static_cast<Calls*>(context);
  ++calls.count;
  calls.id = id;
  calls.out_bytes = out_bytes;
  calls.budget_bytes = budget_bytes;
}

void escape(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

poolalloc_tag_stats stats_of(int id) {
  poolalloc_tag_stats stats{};
  EXPECT_EQ(poolalloc_get_tag_stats(id, &stats), 0) << id;
  return stats;
}

int new_tag(const char* name) {
  const int id = poolalloc_tag_register(name);
  EXPECT_GT(id, 0) << name;
  return id;
}

TEST(TagBudgets, ATagHasNoBudgetUntilOneIsSet) {
  const int id = new_tag("NoBudgetYet");
  EXPECT_EQ(stats_of(id).budget_bytes, POOLALLOC_TAG_NO_BUDGET);
  EXPECT_EQ(stats_of(id).over_budget, 0u);
}

TEST(TagBudgets, SettingABudgetOfAnUnregisteredIdFailsWithEinval) {
  for (const int id : {-1, 256, 1000}) {
    errno = 0;
    EXPECT_EQ(poolalloc_tag_set_budget(id, 1024, nullptr, nullptr), -1) << id;
    EXPECT_EQ(errno, EINVAL) << id;
  }
}

// A block above the pools charges its tag in its own malloc: the call comes before it returns.
TEST(TagBudgets, TheCallbackRunsInTheMallocThatTakesTheTagOverItsBudget) {
  const int id = new_tag("LargeBudget");
  Calls calls;
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, record, &calls), 0);
  void* first = nullptr;
  void* second = nullptr;
  {
    const poolalloc::TagScope scope(id);
    first = malloc(512 << 10);
    escape(first);
    EXPECT_EQ(calls.count, 0);
    second = malloc(768 << 10);
    escape(second);
    EXPECT_EQ(calls.count, 1);
  }
  EXPECT_EQ(calls.id, id);
  EXPECT_EQ(calls.budget_bytes, std::uint64_t{1} << 20);
  EXPECT_EQ(calls.out_bytes, std::uint64_t{(512 + 768) << 10});
  EXPECT_EQ(stats_of(id).over_budget, 1u);
  EXPECT_EQ(stats_of(id).budget_bytes, std::uint64_t{1} << 20);
  free(first);
  free(second);
}

// Pooled blocks move the charge a refill at a time; the tag comes back under its budget once
// its freed blocks went back to their spans (malloc_trim(0) sends them), and goes over again.
TEST(TagBudgets, TheCallbackIsCalledOnceEachTimeTheTagGoesOverItsBudget) {
  const int id = new_tag("PooledBudget");
  Calls calls;
  ASSERT_EQ(poolalloc_tag_set_budget(id, 64 << 10, record, &calls), 0);
  std::vector<void*> blocks(512);
  for (int round = 1; round <= 2; ++round) {
    {
      const poolalloc::TagScope scope(id);
      for (void*& p : blocks) escape(p = malloc(1024));
    }
    EXPECT_EQ(calls.count, round);
    EXPECT_GT(calls.out_bytes, std::uint64_t{64} << 10);
    for (void* p : blocks) free(p);
    malloc_trim(0);
    EXPECT_LT(stats_of(id).live_bytes, std::uint64_t{64} << 10);
  }
  EXPECT_EQ(stats_of(id).over_budget, 2u);
}

// A budget set below what the tag has out: the tag is over it at once.
TEST(TagBudgets, ABudgetSetBelowWhatTheTagHoldsCallsTheCallbackInTheSet) {
  const int id = new_tag("LateBudget");
  void* block = nullptr;
  {
    const poolalloc::TagScope scope(id);
    escape(block = malloc(2 << 20));
  }
  Calls calls;
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, record, &calls), 0);
  EXPECT_EQ(calls.count, 1);
  EXPECT_EQ(calls.out_bytes, std::uint64_t{2} << 20);
  free(block);
}

// A tag over its budget whose budget is set again (a game that applies its budgets every frame)
// has not gone over again: no call, until it comes back under and goes over.
TEST(TagBudgets, ABudgetSetAgainWhileTheTagIsOverItIsNoNewCrossing) {
  const int id = new_tag("BudgetEveryFrame");
  void* block = nullptr;
  {
    const poolalloc::TagScope scope(id);
    escape(block = malloc(2 << 20));
  }
  Calls calls;
  for (const int budget : {1 << 20, 1 << 20, 3 << 19, 1 << 19})
    ASSERT_EQ(poolalloc_tag_set_budget(id, budget, record, &calls), 0);
  EXPECT_EQ(calls.count, 1);
  EXPECT_EQ(stats_of(id).over_budget, 1u);
  ASSERT_EQ(poolalloc_tag_set_budget(id, 4 << 20, record, &calls), 0);
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, record, &calls), 0);
  EXPECT_EQ(calls.count, 2);
  free(block);
}

// A realloc that grows a block above the pools where it lies takes its tag over in that realloc:
// the call comes before it returns.
TEST(TagBudgets, TheCallbackRunsInTheReallocThatGrowsABlockInPlaceOverTheBudget) {
  const int id = new_tag("GrownInPlace");
  const poolalloc::TagScope scope(id);
  void* block = malloc(200000);
  void* shrunk = realloc(block, 100000);  // glibc cuts the block where it lies
  ASSERT_NE(shrunk, nullptr);
  Calls calls;
  ASSERT_EQ(poolalloc_tag_set_budget(id, 150000, record, &calls), 0);
  void* grown = realloc(shrunk, 200000);
  ASSERT_NE(grown, nullptr);
  if (grown != shrunk) GTEST_SKIP() << "glibc moved the block: no growth in place to check";
  EXPECT_EQ(calls.count, 1);
  EXPECT_EQ(calls.out_bytes, 200000u);
  free(grown);
}

TEST(TagBudgets, NoBudgetRemovesTheBudgetAndItsCallback) {
  const int id = new_tag("RemovedBudget");
  Calls calls;
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, record, &calls), 0);
  ASSERT_EQ(poolalloc_tag_set_budget(id, POOLALLOC_TAG_NO_BUDGET, record, &calls), 0);
  EXPECT_EQ(stats_of(id).budget_bytes, POOLALLOC_TAG_NO_BUDGET);
  {
    const poolalloc::TagScope scope(id);
    void* block = malloc(4 << 20);
    escape(block);
    free(block);
  }
  EXPECT_EQ(calls.count, 0);
}

// A NULL callback: the crossings are counted all the same.
TEST(TagBudgets, WithoutACallbackTheCrossingsAreCounted) {
  const int id = new_tag("CountedBudget");
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, nullptr, nullptr), 0);
  {
    const poolalloc::TagScope scope(id);
    void* block = malloc(2 << 20);
    escape(block);
    free(block);
  }
  EXPECT_EQ(stats_of(id).over_budget, 1u);
}

// The callback allocates under the tag that went over (no new crossing: it is over already),
// frees, reads the tags' figures and sets another tag's budget, inside the malloc that called it.
struct Reentrant {
  int calls = 0;
  int other = 0;
  std::uint64_t live_seen = 0;
};
void allocate_in_callback(int id, std::uint64_t, std::uint64_t, void* context) {
  Reentrant& r = *static_cast<Reentrant*>(context);
  ++r.calls;
  std::vector<char> log(100 << 10, 'x');
  escape(log.data());
  std::string line = "over budget: " + std::to_string(id);
  escape(line.data());
  poolalloc_tag_stats stats{};
  if (poolalloc_get_tag_stats(id, &stats) == 0) r.live_seen = stats.live_bytes;
  poolalloc_tag_set_budget(r.other, 1 << 30, nullptr, nullptr);
}

TEST(TagBudgets, TheCallbackMayAllocateFreeAndReadTheTagsFigures) {
  const int id = new_tag("ReentrantBudget");
  Reentrant r;
  r.other = new_tag("ReentrantOther");
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, allocate_in_callback, &r), 0);
  void* block = nullptr;
  {
    const poolalloc::TagScope scope(id);
    escape(block = malloc(2 << 20));
    EXPECT_EQ(r.calls, 1);
  }
  EXPECT_GE(r.live_seen, std::uint64_t{2} << 20);
  EXPECT_EQ(stats_of(r.other).budget_bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(stats_of(id).live_bytes, std::uint64_t{2} << 20);  // the callback's blocks are freed
  free(block);
}

std::string printed_table() {
  FILE* file = tmpfile();
  EXPECT_NE(file, nullptr);
  poolalloc_print_stats(fileno(file));
  std::string text;
  char buffer[4096];
  rewind(file);
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  fclose(file);
  return text;
}

// The line of the table that ends with `name`.
std::string row_of(const std::string& table, const std::string& name) {
  const std::string ending = "  " + name + "\n";
  const std::size_t end = table.find(ending);
  if (end == std::string::npos) return "";
  const std::size_t start = table.rfind('\n', end) + 1;
  return table.substr(start, end + ending.size() - start);
}

TEST(StatsTable, ShowsARowPerRegisteredTagWithItsLiveBytesBlocksPeakAndBudget) {
  const int id = new_tag("TableRow");
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, nullptr, nullptr), 0);
  std::vector<void*> blocks(10);
  {
    const poolalloc::TagScope scope(id);
    for (void*& p : blocks) escape(p = malloc(4096));
  }
  const std::string table = printed_table();
  EXPECT_NE(table.find("per memory tag"), std::string::npos) << table;
  const std::string row = row_of(table, "TableRow");
  const std::string number = std::to_string(id);
  EXPECT_EQ(row, std::string(5 - number.size(), ' ') + number +
                     "      40 KiB          10      40 KiB       1 MiB     0  TableRow\n")
      << table;
  EXPECT_NE(row_of(table, "untagged"), "") << table;
  for (void* p : blocks) free(p);
}

// As in the title: a name's control characters would split its row (a line break) or reach the
// terminal (an escape sequence).
TEST(StatsTable, ShowsTheControlCharactersOfATagsNameAsQuestionMarks) {
  const int id = new_tag("Bad\nName\x1b[31m\x7f");
  const std::string table = printed_table();
  const std::string number = std::to_string(id);
  EXPECT_EQ(row_of(table, "Bad?Name?[31m?"),
            std::string(5 - number.size(), ' ') + number +
                "         0 B           0         0 B        none     0  Bad?Name?[31m?\n")
      << table;
  EXPECT_EQ(table.find_first_of("\x1b\x7f"), std::string::npos) << table;
}

// A budget near UINT64_MAX is "16777216 TiB", as wide as its column: a space still comes before it.
TEST(StatsTable, AFigureAsWideAsItsColumnStillHasASpaceBeforeIt) {
  const int id = new_tag("HugeBudget");
  ASSERT_EQ(poolalloc_tag_set_budget(id, POOLALLOC_TAG_NO_BUDGET - 1, nullptr, nullptr), 0);
  const std::string table = printed_table();
  const std::string number = std::to_string(id);
  EXPECT_EQ(row_of(table, "HugeBudget"),
            std::string(5 - number.size(), ' ') + number +
                "         0 B           0         0 B 16777216 TiB     0  HugeBudget\n")
      << table;
}

// The toolkit's table in a program linked with the library: the tags' rows follow the trackers'.
TEST(PrintBudgets, ShowsTheMallocsTagsBesideTheTrackedArenasInOneTable) {
  const int id = new_tag("Audio");
  ASSERT_EQ(poolalloc_tag_set_budget(id, 1 << 20, nullptr, nullptr), 0);
  void* block = nullptr;
  {
    const poolalloc::TagScope scope(id);
    escape(block = malloc(2 << 20));
  }
  poolalloc::FixedPool pool(64, 16);
  poolalloc::Tracked tracked(pool, 1024);
  tracked.set_name("bullets");
  std::ostringstream out;
  poolalloc::print_budgets(out);
  const std::string table = out.str();
  EXPECT_NE(
      table.find("bullets                                    0           0        1024     0\n"),
      std::string::npos)
      << table;
  EXPECT_NE(
      table.find("tag:Audio                            2097152     2097152     1048576     1\n"),
      std::string::npos)
      << table;
  EXPECT_LT(table.find("bullets"), table.find("tag:Audio")) << table;
  free(block);
}

// The same program but linked with nothing of the library, run with it preloaded: the toolkit
// finds the tags at run time.
TEST(PrintBudgets, FindsTheTagsOfAPreloadedLibrary) {
  const auto run = options_test::run_preloaded("", PRINT_BUDGETS_PROBE);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("bullets "), std::string::npos) << run.err;
  EXPECT_NE(
      run.err.find("tag:Physics                          2097152     2097152     1048576     1\n"),
      std::string::npos)
      << run.err;
}

}  // namespace
