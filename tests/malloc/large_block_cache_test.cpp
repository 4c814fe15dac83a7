// The large-block cache (src/large_blocks.hpp): while the decay thread runs, a freed block of
// glibc's main heap above 32 KiB waits for the next malloc of its size class, which takes it
// with no system call and no page fault; calloc, realloc and the aligned forms still go to
// glibc; a pointer that glibc did not hand out still goes to glibc's free, and a cached block
// freed again is reported. Each test is a process of its own (gtest_discover_tests).
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"
#include "rss_workloads.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The cache keeps blocks while the decay thread runs, which starts in a program that runs threads
// of its own (tuning.md): one that waits for the rest of the test. Then a block of `largest`
// bytes, which glibc maps (a mapped block is not cached) and after which poolalloc raises glibc's
// mmap threshold: blocks up to that size then come from glibc's heap.
void start_decay_thread(size_t largest = 4 * kMiB) {
  free(malloc(opaque(largest)));
  static ThreadOfItsOwn* const companion = new ThreadOfItsOwn;  // lives until the test exits
  (void)companion;
  ASSERT_TRUE(decay_thread_started());
}

// A figure of the statistics table's line on the cache ("large blocks kept for reuse: ... (N
// blocks; M requests served from them)"), the number after `marker`; UINT64_MAX if not found.
uint64_t cache_figure(const char* table, const char* marker) {
  const char* line = std::strstr(table, "large blocks kept for reuse: ");
  const char* figure = line == nullptr ? nullptr : std::strstr(line, marker);
  return figure == nullptr ? UINT64_MAX : std::strtoull(figure + std::strlen(marker), nullptr, 10);
}

// The same, of the table as poolalloc_print_stats writes it now.
uint64_t cache_figure(const char* marker) {
  const int fd = memfd_create("stats", MFD_CLOEXEC);
  poolalloc_print_stats(fd);
  char text[16384] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  return n <= 0 ? UINT64_MAX : cache_figure(text, marker);
}

uint64_t requests_served_from_the_cache() {
  return cache_figure(" blocks; ");
}

uint64_t blocks_in_the_cache() {
  return cache_figure("(");
}

// The usable size of a block of 1 MiB, as glibc's heap hands it out (the class bound is 1 MiB).
constexpr size_t kMiBBlock = kMiB + sizeof(size_t);

// A program whose glibc heap stays under 16 MiB: the cache keeps at most 4 MiB of its frees
// (a quarter of the heap is less), where it kept all of these 12 blocks of 1 MiB (up to 32 MiB),
// memory that the program's blocks of other sizes could not reuse. (malloc_trim empties the
// cache of what start_decay_thread freed.)
TEST(LargeBlockCache, ASmallProgramsCacheHoldsAtMostFourMiB) {
  start_decay_thread();
  malloc_trim(0);
  constexpr int kBlocks = 12;
  void* blocks[kBlocks];
  for (void*& block : blocks) {
    block = malloc(opaque(kMiB));
    ASSERT_NE(block, nullptr);
  }
  for (void* block : blocks) free(block);
  EXPECT_LT(mallinfo2().arena, 16 * kMiB);
  EXPECT_EQ(blocks_in_the_cache(), (4 * kMiB) / kMiBBlock);
}

// A program with a larger glibc heap: the cache keeps up to a quarter of it. The blocks freed
// are the heap's lowest, so that glibc, given those the cache does not keep, merges them and
// trims nothing: the heap's size (mallinfo2's arena, from where the heap began to the program
// break) is the same after the frees as during them.
TEST(LargeBlockCache, ALargerProgramsCacheHoldsAQuarterOfGlibcsHeap) {
  start_decay_thread();
  malloc_trim(0);
  constexpr int kBlocks = 96, kFreed = 32;
  void* blocks[kBlocks];
  for (void*& block : blocks) {
    block = malloc(opaque(kMiB));
    ASSERT_NE(block, nullptr);
  }
  std::sort(blocks, blocks + kBlocks);
  for (int i = 0; i < kFreed; ++i) free(blocks[i]);
  const size_t heap = mallinfo2().arena;
  EXPECT_GT(heap, 64 * kMiB);
  EXPECT_EQ(blocks_in_the_cache(), heap / 4 / kMiBBlock);
  for (int i = kFreed; i < kBlocks; ++i) free(blocks[i]);
}

// Rounds of 12 blocks of 1 MiB, all live at once, touched, then freed, above a world of 96 MiB
// (untouched) that makes the heap large enough for the cache to keep 12 MiB (a quarter of it).
// Without the cache glibc handed the heap's free 12 MiB top back (past its 8 MiB trim
// threshold) and grew it again with brk at the next round: 3,000 page faults a round. With it,
// every malloc after the first round takes a block that waits in the cache, the same blocks
// each round.
TEST(LargeBlockCache, FreedBlocksAreTakenAgainWithoutSystemCallsOrPageFaults) {
  start_decay_thread();
  void* world[24];
  for (void*& block : world) block = malloc(opaque(4 * kMiB));
  constexpr int kRounds = 20, kBlocks = 12;
  void* first[kBlocks];
  long faults = 0;
  uint64_t served = 0;
  size_t heap = 0;
  for (int round = 0; round < kRounds; ++round) {
    if (round == 1) {
      faults = minor_faults();
      served = requests_served_from_the_cache();
      heap = mallinfo2().arena;
    }
    void* blocks[kBlocks];
    for (void*& block : blocks) {
      block = malloc(opaque(kMiB));
      ASSERT_NE(block, nullptr);
      std::memset(block, round, kMiB);
    }
    if (round == 0) std::copy(blocks, blocks + kBlocks, first);
    std::sort(blocks, blocks + kBlocks);
    std::sort(first, first + kBlocks);
    EXPECT_TRUE(std::equal(blocks, blocks + kBlocks, first)) << "round " << round;
    for (void* block : blocks) free(block);
  }
  faults = minor_faults() - faults;
  std::printf("%ld page faults in %d rounds of %d x 1 MiB\n", faults, kRounds - 1, kBlocks);
  EXPECT_EQ(requests_served_from_the_cache() - served, uint64_t{(kRounds - 1) * kBlocks});
  EXPECT_EQ(mallinfo2().arena, heap) << "glibc's heap grew or shrank";
  EXPECT_LT(faults, 64);
  for (void* block : world) free(block);
}

// A cached block's usable size covers the request, and glibc's realloc takes it as its own.
TEST(LargeBlockCache, CachedBlockHasTheUsableSizeAndReallocTakesIt) {
  start_decay_thread();
  constexpr size_t kSize = 100000;
  void* p = malloc(opaque(kSize));
  ASSERT_NE(p, nullptr);
  free(p);
  const uint64_t served = requests_served_from_the_cache();
  void* q = malloc(opaque(kSize));
  ASSERT_EQ(q, p) << "not the cached block";
  EXPECT_EQ(requests_served_from_the_cache(), served + 1);
  const size_t usable = malloc_usable_size(q);
  EXPECT_GE(usable, kSize);
  fill(q, usable, 7);
  void* grown = realloc(q, opaque(3 * kMiB));
  ASSERT_NE(grown, nullptr);
  EXPECT_TRUE(matches(grown, usable, 7));
  void* shrunk = realloc(grown, opaque(size_t{50000}));
  ASSERT_NE(shrunk, nullptr);
  EXPECT_TRUE(matches(shrunk, 50000, 7));
  free(shrunk);
  // calloc is glibc's: never a cached block, always zeroed.
  void* r = malloc(opaque(kSize));
  fill(r, kSize, 8);
  free(r);
  const uint64_t before_calloc = requests_served_from_the_cache();
  void* zeroed = calloc(1, opaque(kSize));
  ASSERT_NE(zeroed, nullptr);
  EXPECT_TRUE(all_bytes_are(zeroed, kSize, 0));
  EXPECT_EQ(requests_served_from_the_cache(), before_calloc);
  free(zeroed);
}

class LargeBlockCacheDeathTest : public testing::Test {
 protected:
  // The child runs the test from the start: it has a decay thread of its own.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// A pointer glibc did not hand out, with a header that looks like one of its chunks in use
// (256 KiB, the next chunk's PREV_INUSE bit set) but outside its main heap: glibc's free aborts
// on it as before, rather than the cache keeping it for the next malloc.
TEST_F(LargeBlockCacheDeathTest, ForeignPointerStillGoesToGlibc) {
  EXPECT_DEATH(
      {
        start_decay_thread();
        constexpr size_t kChunk = (size_t{256} << 10) + 16;
        void* map = mmap(nullptr, kChunk + 4096, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        auto* chunk = static_cast<size_t*>(map);
        chunk[1] = kChunk | 1;
        chunk[kChunk / sizeof(size_t) + 1] = 64 | 1;
        free(hide(chunk + 2));
      },
      "double free or corruption \\(out\\)");
}

// A block freed twice while it waits in the cache is reported: taken twice, it would have two
// owners.
// An interior pointer of a live block, behind words that look like a glibc chunk in use whose
// next chunk is free but records no matching size after it: glibc's free aborts on it (it checks
// that size before it merges the chunks), and the cache, which makes the same checks, leaves
// it to glibc rather than hand the live block's memory out again.
TEST_F(LargeBlockCacheDeathTest, AForgedChunkInsideALiveBlockStillGoesToGlibc) {
  EXPECT_DEATH(
      {
        start_decay_thread();
        constexpr size_t kChunk = 114704;  // the chunk of a block of the 100,000-byte class
        auto* live = static_cast<size_t*>(malloc(opaque(size_t{1} << 20)));
        memset(live, 0, size_t{1} << 20);
        size_t* forged = live + 1000;
        forged[-1] = kChunk | 1;  // in use
        auto* next = reinterpret_cast<size_t*>(reinterpret_cast<char*>(forged - 2) + kChunk);
        next[1] = 0x1000 | 1;  // the block is in use
        free(hide(forged));
        std::fputs("the forged block was taken\n", stderr);
        std::_Exit(0);
      },
      "corrupted size vs. prev_size");
}

TEST_F(LargeBlockCacheDeathTest, CachedBlockFreedTwiceIsReported) {
  EXPECT_DEATH(
      {
        start_decay_thread();
        void* p = malloc(opaque(size_t{256} << 10));
        free(p);
        free(hide(p));
      },
      "^poolalloc: free\\(0x[0-9a-f]+\\): double free of the 262152-byte block above the "
      "pools\n");
}

// fork() while other threads take and give back cached blocks: the child finds the cache's
// lock free and takes and frees large blocks itself.
// realloc of a block that waits in the cache (freed already) is a double free too: glibc would
// take the chunk as its own, live one, and the cache would hand it out again.
TEST_F(LargeBlockCacheDeathTest, ReallocOfACachedBlockIsReported) {
  EXPECT_DEATH(
      {
        start_decay_thread();
        void* p = malloc(opaque(size_t{256} << 10));
        free(p);
        void* moved = realloc(hide(p), opaque(size_t{768} << 10));
        std::printf("%p\n", moved);
      },
      "^poolalloc: realloc\\(0x[0-9a-f]+\\): double free of the 262152-byte block above the "
      "pools\n");
}

// A child of fork() has no decay thread until its own starts, and keeps its parent's cached
// blocks: a free there of a block that waits in the cache is reported as in the parent, not
// handed to glibc while the cache hands it out again.
TEST_F(LargeBlockCacheDeathTest, AChildOfForkReportsAFreeOfABlockCachedInItsParent) {
  EXPECT_DEATH(
      {
        start_decay_thread();
        void* p = malloc(opaque(size_t{256} << 10));
        free(p);
        if (fork() == 0) free(hide(p));
        int status = 0;
        wait(&status);
        if (WIFSIGNALED(status)) std::_Exit(1);
        std::fputs("the child went on\n", stderr);
        std::_Exit(0);
      },
      "poolalloc: free\\(0x[0-9a-f]+\\): double free of the 262152-byte block above the "
      "pools\n");
}

// What a function of glibc's reports before a malloc of 64 KiB, while the block is live, and
// once it is freed into the cache.
template <class Report>
struct AroundAFree {
  Report before, live, cached;
};

constexpr size_t k64KiB = size_t{64} << 10;

// Reads `report()` around a malloc and a free of 64 KiB, in a program with a thread of its own
// and the decay thread (start_decay_thread). With nothing but the test allocating, glibc's figures
// move by the block's chunk alone; the decay thread may move the pools' spans (a part of
// mallinfo2's figures and of malloc_info's totals) or give the block back meanwhile: a try that it
// disturbed, which the pools' figures or the cache's count tell, is made again.
template <class Report, class Read>
AroundAFree<Report> around_a_free(Read report) {
  AroundAFree<Report> result{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    malloc_trim(0);  // no block waits in the cache
    (void)report();  // a first call may look glibc's function up
    poolalloc_stats pools_before{}, pools_after{};
    poolalloc_get_stats(&pools_before);
    result.before = report();
    void* p = malloc(opaque(k64KiB));
    result.live = report();
    free(p);
    const uint64_t kept = blocks_in_the_cache();
    result.cached = report();
    poolalloc_get_stats(&pools_after);
    if (kept == 1 && result.cached.kept == 1 && pools_before.bytes_held == pools_after.bytes_held &&
        pools_before.retained_bytes == pools_after.retained_bytes &&
        pools_before.pooled_live == pools_after.pooled_live)
      return result;
  }
  ADD_FAILURE() << "the 64 KiB block never stayed in the cache for the whole check";
  return result;
}

struct Mallinfo2 {
  struct mallinfo2 info;
  int narrow_uordblks, narrow_fordblks;  // mallinfo's
  uint64_t kept;                         // blocks in the cache right after
};

// mallinfo2 and mallinfo count a block that waits in the cache free, as glibc counts its own
// free chunks: in use goes back to what it was before the malloc, and the chunk moves to the free
// figures.
TEST(LargeBlockCache, ACachedBlockCountsAsFreeInMallinfo2) {
  start_decay_thread();
  const auto reads = around_a_free<Mallinfo2>([] {
    const struct mallinfo2 info = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    const struct mallinfo narrow = mallinfo();
#pragma GCC diagnostic pop
    return Mallinfo2{info, narrow.uordblks, narrow.fordblks, blocks_in_the_cache()};
  });
  const struct mallinfo2 &before = reads.before.info, &live = reads.live.info,
                         &cached = reads.cached.info;
  const size_t chunk = live.uordblks - before.uordblks;
  EXPECT_GE(chunk, k64KiB);
  EXPECT_EQ(cached.uordblks, before.uordblks);
  EXPECT_EQ(cached.fordblks, live.fordblks + chunk);
  EXPECT_EQ(cached.ordblks, live.ordblks + 1);
  EXPECT_EQ(cached.arena, live.arena);
  EXPECT_EQ(reads.cached.narrow_uordblks, reads.before.narrow_uordblks);
  EXPECT_EQ(reads.cached.narrow_fordblks - reads.live.narrow_fordblks, static_cast<int>(chunk));
}

// malloc_stats' output: the table's count of cached blocks, and glibc's report's "in use bytes"
// of its main heap (Arena 0) and in all.
struct MallocStats {
  uint64_t kept;
  unsigned main_heap_in_use, total_in_use;
};

MallocStats malloc_stats_output() {
  const int capture = memfd_create("stderr", MFD_CLOEXEC);
  const int saved_stderr = dup(STDERR_FILENO);
  dup2(capture, STDERR_FILENO);
  malloc_stats();
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  char text[16384] = {};
  const ssize_t n = pread(capture, text, sizeof text - 1, 0);
  close(capture);
  MallocStats stats{n <= 0 ? UINT64_MAX : cache_figure(text, "("), UINT_MAX, UINT_MAX};
  const char* arena = std::strstr(text, "Arena 0:\n");
  const char* total = std::strstr(text, "Total (incl. mmap):\n");
  if (arena != nullptr)
    std::sscanf(arena, "Arena 0:\nsystem bytes = %*u\nin use bytes = %u", &stats.main_heap_in_use);
  if (total != nullptr)
    std::sscanf(total, "Total (incl. mmap):\nsystem bytes = %*u\nin use bytes = %u",
                &stats.total_in_use);
  return stats;
}

// malloc_stats counts a block that waits in the cache free: glibc's "in use bytes" go back to
// what they were before the malloc.
TEST(LargeBlockCache, ACachedBlockCountsAsFreeInMallocStats) {
  start_decay_thread();
  const auto reads = around_a_free<MallocStats>(malloc_stats_output);
  ASSERT_NE(reads.before.main_heap_in_use, UINT_MAX) << "no Arena 0 in malloc_stats' report";
  ASSERT_NE(reads.before.total_in_use, UINT_MAX) << "no total in malloc_stats' report";
  EXPECT_GE(reads.live.main_heap_in_use - reads.before.main_heap_in_use, k64KiB);
  EXPECT_EQ(reads.cached.main_heap_in_use, reads.before.main_heap_in_use);
  EXPECT_EQ(reads.cached.total_in_use, reads.before.total_in_use);
}

// malloc_info's document: glibc's main heap's (the first) fast and rest totals and its system
// size, and the document's rest total.
struct MallocInfo {
  uint64_t kept;
  size_t main_fast, main_rest_count, main_rest, main_current, rest_count, rest;
  size_t main_in_use() const { return main_current - main_fast - main_rest; }
};

MallocInfo malloc_info_document(FILE* stream, int fd) {
  const bool emptied = ftruncate(fd, 0) == 0;
  rewind(stream);
  const int status = malloc_info(0, stream);
  fflush(stream);
  char text[1 << 16] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  MallocInfo info{blocks_in_the_cache(), 0, 0, 0, 0, 0, 0};
  const char* main_heap = std::strstr(text, "<total type=\"fast\" ");
  const char* totals = nullptr;
  for (const char* at = text; (at = std::strstr(at, "</heap>\n")) != nullptr; ++at) totals = at;
  const bool parsed = emptied && status == 0 && n > 0 && main_heap != nullptr &&
                      totals != nullptr &&
                      std::sscanf(main_heap,
                                  "<total type=\"fast\" count=\"%*u\" size=\"%zu\"/>\n"
                                  "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
                                  "<system type=\"current\" size=\"%zu\"/>\n",
                                  &info.main_fast, &info.main_rest_count, &info.main_rest,
                                  &info.main_current) == 4 &&
                      std::sscanf(totals,
                                  "</heap>\n<total type=\"fast\" count=\"%*u\" size=\"%*u\"/>\n"
                                  "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
                                  &info.rest_count, &info.rest) == 2;
  if (!parsed) info.kept = UINT64_MAX;
  return info;
}

// malloc_info counts a block that waits in the cache free: in glibc's main heap, which the block
// is a chunk of, it is in the "rest" (free) total, and its in use (system less fast and rest)
// goes back to what it was before the malloc; in the document's totals, in the "rest" too.
TEST(LargeBlockCache, ACachedBlockCountsAsFreeInMallocInfo) {
  start_decay_thread();
  const int fd = memfd_create("malloc_info", MFD_CLOEXEC);
  FILE* stream = fdopen(fd, "w");
  ASSERT_NE(stream, nullptr);
  malloc_info_document(stream, fd);  // the stream's buffer
  const auto reads =
      around_a_free<MallocInfo>([stream, fd] { return malloc_info_document(stream, fd); });
  fclose(stream);
  const MallocInfo &before = reads.before, &live = reads.live, &cached = reads.cached;
  const size_t chunk = live.main_in_use() - before.main_in_use();
  EXPECT_GE(chunk, k64KiB);
  EXPECT_EQ(cached.main_in_use(), before.main_in_use());
  EXPECT_EQ(cached.main_rest, live.main_rest + chunk);
  EXPECT_EQ(cached.main_rest_count, live.main_rest_count + 1);
  EXPECT_EQ(cached.main_current, live.main_current);
  EXPECT_EQ(cached.rest, live.rest + chunk);
  EXPECT_EQ(cached.rest_count, live.rest_count + 1);
}

TEST(LargeBlockCache, ChildOfForkUsesTheCacheWhileOtherThreadsChurn) {
  start_decay_thread();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        void* p = malloc(opaque(size_t{256} << 10));
        if (p != nullptr) static_cast<char*>(p)[0] = 1;
        free(p);
      }
    });
  }
  for (int child = 0; child < 50; ++child) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 100; ++i) {
        void* p = malloc(opaque(size_t{256} << 10));
        if (p == nullptr) _exit(1);
        std::memset(p, i, size_t{256} << 10);
        free(p);
      }
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << child;
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
}

// Threads free the large blocks that others allocated, through the cache: every block, cached
// or not, has one owner at a time (each owner fills it with its own pattern and checks it).
TEST(LargeBlockCache, ThreadsFreeEachOthersBlocks) {
  start_decay_thread();
  constexpr int kThreads = 4, kRounds = 2000;
  constexpr size_t kSlots = 64;
  std::atomic<void*> slots[kSlots] = {};
  std::atomic<int> failures{0};
  const uint64_t seed = poolalloc_test::test_seed(11);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      for (int round = 0; round < kRounds; ++round) {
        const size_t size = (size_t{40} << 10) + rng() % (size_t{1} << 20);
        auto* block = static_cast<size_t*>(malloc(opaque(size)));
        if (block == nullptr) continue;
        block[0] = size;
        fill(block + 1, 256, reinterpret_cast<uintptr_t>(block));
        void* old = slots[rng() % kSlots].exchange(block);
        if (old == nullptr) continue;
        auto* taken = static_cast<size_t*>(old);
        if (malloc_usable_size(taken) < taken[0] ||
            !matches(taken + 1, 256, reinterpret_cast<uintptr_t>(taken)))
          failures.fetch_add(1);
        free(taken);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (auto& slot : slots) free(slot.load());
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace malloc_test
