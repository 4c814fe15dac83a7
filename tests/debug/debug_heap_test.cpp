// libpoolalloc-debug without a mistake in sight: fill patterns, exact usable sizes; and run as
// a separate program (debug_helper): POOLALLOC_ON_ERROR=report carries on after a report, and
// POOLALLOC_LEAKS=1 prints a leak report grouped by call site, largest first.
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "poolalloc/poolalloc.h"

#include "malloc_test_util.hpp"
#include "run_helper.hpp"

namespace {

using debug_test::exited_with;
using debug_test::run_helper;
using malloc_test::all_bytes_are;
using malloc_test::hide;
using malloc_test::is_aligned;
using malloc_test::opaque;

constexpr unsigned char kFresh = 0xa5;
constexpr unsigned char kFreed = 0x5a;

const std::size_t kSizes[] = {0, 1, 15, 16, 24, 100, 1000, 4000, 32 * 1024 - 32, 40000, 300000};

TEST(DebugFill, MallocReturnsBytesOf0xa5) {
  for (std::size_t size : kSizes) {
    // Reuse of freed, pattern-filled memory must not show through either.
    void* old = malloc(opaque(size));
    if (size != 0) std::memset(old, 0x11, size);
    free(old);
    void* p = malloc(opaque(size));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(all_bytes_are(p, size, kFresh)) << size;
    free(p);
  }
}

TEST(DebugFill, AlignedAllocationsAndNewAreFilledToo) {
  for (std::size_t alignment : {16u, 64u, 4096u, 65536u}) {
    void* p = nullptr;
    ASSERT_EQ(posix_memalign(&p, alignment, opaque<std::size_t>(200)), 0);
    EXPECT_TRUE(is_aligned(p, alignment));
    EXPECT_TRUE(all_bytes_are(p, 200, kFresh)) << alignment;
    free(p);
  }
  void* object = ::operator new(opaque<std::size_t>(72));
  EXPECT_TRUE(all_bytes_are(object, 72, kFresh));
  ::operator delete (object, std::size_t{72});
  void* aligned = ::operator new (opaque<std::size_t>(72), std::align_val_t{128});
  EXPECT_TRUE(is_aligned(aligned, 128));
  EXPECT_TRUE(all_bytes_are(aligned, 72, kFresh));
  ::operator delete (aligned, std::align_val_t{128});
}

TEST(DebugFill, CallocIsZero) {
  for (std::size_t size : kSizes) {
    void* old = malloc(opaque(size));
    free(old);
    void* p = calloc(1, opaque(size));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(all_bytes_are(p, size, 0)) << size;
    free(p);
  }
}

TEST(DebugFill, ReallocKeepsTheContentsAndFillsTheGrowth) {
  auto* p = static_cast<unsigned char*>(malloc(opaque<std::size_t>(10)));
  std::memset(p, 7, 10);
  p = static_cast<unsigned char*>(realloc(p, opaque<std::size_t>(5000)));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(all_bytes_are(p, 10, 7));
  EXPECT_TRUE(all_bytes_are(p + 10, 5000 - 10, kFresh));
  EXPECT_EQ(malloc_usable_size(p), 5000u);
  free(p);
}

TEST(DebugFill, FreedBlocksAreFilledWith0x5a) {
  // A freed block waits in the quarantine, its bytes set to 0x5a. (Reading it is the kind of
  // mistake the fill makes visible; the block is not reused while it waits.)
  auto* p = static_cast<unsigned char*>(malloc(opaque<std::size_t>(48)));
  std::memset(p, 0, 48);
  free(p);
  EXPECT_TRUE(all_bytes_are(hide(p), 48, kFreed));
}

TEST(DebugUsableSize, IsExactlyTheRequestedSize) {
  for (std::size_t size : kSizes) {
    void* p = malloc(opaque(size));
    EXPECT_EQ(malloc_usable_size(p), size);
    free(p);
    void* q = nullptr;
    ASSERT_EQ(posix_memalign(&q, 256, opaque(size)), 0);
    EXPECT_EQ(malloc_usable_size(q), size);
    free(q);
  }
  EXPECT_EQ(malloc_usable_size(nullptr), 0u);
}

// An alignment of 2^32 or more: the padding before the block no longer fits 32 bits, and the
// block must still be usable and go back to where it came from (a freed block is released
// when the quarantine, 16 MiB by default, is pushed past its budget).
TEST(DebugAlignment, FourGiBAlignmentAllocatesAndFrees) {
  void* p = nullptr;
  ASSERT_EQ(posix_memalign(&p, opaque(std::size_t{1} << 32), opaque<std::size_t>(16)), 0);
  EXPECT_TRUE(is_aligned(p, std::size_t{1} << 32));
  EXPECT_EQ(malloc_usable_size(p), 16u);
  std::memset(p, 1, 16);
  free(p);
  free(malloc(opaque<std::size_t>(32 << 20)));  // releases p out of the quarantine
}

// free preserves errno (docs/malloc.md), in the debug build as in the release build. A free
// that finds the heap's lock taken sleeps on its futex; a signal that interrupts the sleep
// (EINTR), or an unlock that comes just before it (EAGAIN), must not show in errno. Another
// thread holds the lock long enough: its free fills a 64 MiB block and, as the block is larger
// than the quarantine, checks the fill again as it leaves.
TEST(DebugErrno, FreeKeepsErrnoWhileItWaitsForTheHeapLock) {
  constexpr int kSentinelErrno = 1789;  // no errno code has this value
  struct sigaction action {};
  struct sigaction old_action {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the interrupted futex wait returns EINTR
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old_action), 0);
  constexpr std::size_t kBig = std::size_t{64} << 20;
  int changed = 0;
  int last_errno = kSentinelErrno;
  for (int round = 0; round < 5; ++round) {
    void* big = malloc(opaque(kBig));
    void* small = malloc(opaque<std::size_t>(64));
    ASSERT_NE(big, nullptr);
    std::atomic<int> stage{0};
    int seen = kSentinelErrno;
    std::thread waiter([&] {
      while (stage.load() == 0) {
      }
      usleep(2000);  // the holder is inside free(big) by now
      stage.store(2);
      errno = kSentinelErrno;
      free(small);
      seen = errno;
    });
    std::thread holder([&] {
      stage.store(1);
      free(big);
    });
    while (stage.load() != 2) {
    }
    usleep(3000);  // the waiter sleeps on the lock
    pthread_kill(waiter.native_handle(), SIGUSR1);
    holder.join();
    waiter.join();
    if (seen != kSentinelErrno) {
      ++changed;
      last_errno = seen;
    }
  }
  sigaction(SIGUSR1, &old_action, nullptr);
  EXPECT_EQ(changed, 0) << "free changed errno in " << changed << " of 5 rounds, to " << last_errno;
}

long resident_pages() {
  long size = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%ld %ld", &size, &resident) != 2) resident = -1;
  if (statm != nullptr) std::fclose(statm);
  return resident;
}

// A 16-byte block aligned to 256 MiB: only the guard bytes next to it are written, so the
// padding before it costs address space, not resident memory.
TEST(DebugAlignment, LargeAlignmentTouchesOnlyTheGuards) {
  const long before = resident_pages();
  ASSERT_GT(before, 0);
  void* p = nullptr;
  ASSERT_EQ(posix_memalign(&p, opaque(std::size_t{1} << 28), opaque<std::size_t>(16)), 0);
  const long grown_kib = (resident_pages() - before) * (sysconf(_SC_PAGESIZE) / 1024);
  EXPECT_LT(grown_kib, 1024) << "RSS grew by " << grown_kib << " KiB for a 16-byte block";
  free(p);
}

// statistics.md and tuning.md: in the debug build "a freed block counts as live until it
// leaves the quarantine" (16 MiB by default, so a 24-byte block stays in it).
// debugging.md: the registry of live blocks follows their number, so that its table, sized for
// a peak (a million blocks: 128 MiB of records), goes back once they are freed.
TEST(DebugRegistry, ItsTableGoesBackWhenThePeakIsFreed) {
  constexpr std::size_t kBlocks = std::size_t{1} << 20;
  auto** blocks = static_cast<void**>(mmap(nullptr, kBlocks * sizeof(void*), PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(blocks, MAP_FAILED);
  for (std::size_t i = 0; i < kBlocks; ++i) blocks[i] = malloc(opaque<std::size_t>(16));
  const long peak = resident_pages();
  for (std::size_t i = 0; i < kBlocks; ++i) free(blocks[i]);
  const long freed = resident_pages();
  munmap(blocks, kBlocks * sizeof(void*));
  const long page_kib = sysconf(_SC_PAGESIZE) / 1024;
  std::printf("RSS %ld MiB at the peak, %ld MiB once freed\n", peak * page_kib / 1024,
              freed * page_kib / 1024);
  // The table is 128 MiB, of which all but its last halvings' few pages go back (the blocks'
  // emptied spans wait for the decay thread's next steps).
  EXPECT_GT((peak - freed) * page_kib, 120 * 1024);
}

TEST(DebugStats, ABlockInTheQuarantineCountsAsLive) {
  poolalloc_stats allocated{}, freed{};
  void* p = malloc(opaque<std::size_t>(24));
  ASSERT_EQ(poolalloc_get_stats(&allocated), 0);
  free(p);
  ASSERT_EQ(poolalloc_get_stats(&freed), 0);
  EXPECT_EQ(freed.pooled_live, allocated.pooled_live);
  EXPECT_EQ(freed.pooled_frees, allocated.pooled_frees);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(DebugOnErrorReport, ReportsAndCarriesOn) {
  const auto result = run_helper("mistakes", {"POOLALLOC_ON_ERROR=report"});
  EXPECT_TRUE(exited_with(result, 0)) << result.status << "\n" << result.err;
  EXPECT_EQ(result.out, "still running\n");
  const auto lines = lines_of(result.err);
  ASSERT_EQ(lines.size(), 2u) << result.err;
  EXPECT_TRUE(std::regex_search(
      lines[0], std::regex("^poolalloc-debug: double free: free of 0x[0-9a-f]+ \\(24 bytes in a "
                           "[0-9]+-byte block of size class [0-9]+, allocated at "
                           "debug_site_malloc\\+0x[0-9a-f]+ .* at debug_site_second_free\\+")))
      << lines[0];
  EXPECT_TRUE(std::regex_search(
      lines[1], std::regex("^poolalloc-debug: buffer overflow found when the block was freed: 1 "
                           "bytes past the end of 0x[0-9a-f]+ \\(24 bytes")))
      << lines[1];
}

// A thread with a cancellation pending reports whole (the look-up of a call site and the write
// are cancellation points, made with the heap's lock held), carries on, and is cancelled after:
// the heap stays usable.
TEST(DebugOnErrorReport, AThreadWithACancellationPendingReportsWholeAndCarriesOn) {
  const auto result = run_helper("mistakes_cancel_pending", {"POOLALLOC_ON_ERROR=report"});
  EXPECT_TRUE(exited_with(result, 0)) << result.status << "\n" << result.err;
  EXPECT_EQ(result.out, "still running\n");
  const auto lines = lines_of(result.err);
  ASSERT_EQ(lines.size(), 2u) << result.err;
  EXPECT_EQ(lines[0].rfind("poolalloc-debug: double free: free of ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("; first freed at debug_site_free+0x"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("poolalloc-debug: buffer overflow found when the block was freed", 0),
            0u)
      << lines[1];
}

// The default, abort: the report is written whole and the process aborts, though the thread
// has a cancellation pending.
TEST(DebugOnErrorReport, AThreadWithACancellationPendingReportsWholeAndAborts) {
  const auto result = run_helper("mistakes_cancel_pending", {});
  EXPECT_TRUE(WIFSIGNALED(result.status) && WTERMSIG(result.status) == SIGABRT) << result.status;
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find("; first freed at debug_site_free+0x"), std::string::npos)
      << result.err;
}

TEST(DebugOnErrorReport, AbortsByDefault) {
  const auto result = run_helper("mistakes", {});
  EXPECT_TRUE(WIFSIGNALED(result.status) && WTERMSIG(result.status) == SIGABRT) << result.status;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_EQ(result.err.rfind("poolalloc-debug: double free: ", 0), 0u) << result.err;
}

TEST(DebugOnErrorReport, ReportsWhileAnotherThreadLoadsModules) {
  const auto result = run_helper("reports_during_dlopen", {"POOLALLOC_ON_ERROR=report"});
  EXPECT_TRUE(exited_with(result, 0)) << result.status << "\n" << result.err.substr(0, 2000);
  const auto lines = lines_of(result.err);
  ASSERT_EQ(std::to_string(lines.size()) + "\n", result.out) << result.err.substr(0, 2000);
  for (const std::string& line : lines)
    ASSERT_EQ(line.rfind("poolalloc-debug: invalid free of ", 0), 0u) << line;
}

// exit() from a thread with a cancellation pending: the leak report is written whole, as is
// the statistics table, and the process exits with the status it asked for.
TEST(DebugLeakReport, ExitFromAThreadWithACancellationPendingWritesTheWholeReport) {
  const auto result =
      run_helper("leak_exit_cancel_pending", {"POOLALLOC_LEAKS=1", "POOLALLOC_STATS=1"});
  EXPECT_TRUE(exited_with(result, 0)) << result.status << "\n" << result.err;
  EXPECT_EQ(result.err.rfind("poolalloc-debug: leak report: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find(" bytes in 3 blocks allocated at leak_site_small+0x"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(" bytes in 1 blocks allocated at leak_site_large+0x"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("\nresident in RAM, of both: "), std::string::npos) << result.err;
}

struct LeakLine {
  std::uint64_t bytes = 0, blocks = 0;
  std::string site;
};

TEST(DebugLeakReport, GroupsBySiteLargestFirst) {
  const auto result = run_helper("leak", {"POOLALLOC_LEAKS=1"});
  EXPECT_TRUE(exited_with(result, 0)) << result.status << "\n" << result.err;
  const auto lines = lines_of(result.err);
  ASSERT_GE(lines.size(), 3u) << result.err;
  std::smatch header;
  ASSERT_TRUE(std::regex_match(lines[0], header,
                               std::regex("poolalloc-debug: leak report: ([0-9]+) bytes in "
                                          "([0-9]+) blocks from ([0-9]+) call sites")))
      << lines[0];
  // Other leaks than the program's may be listed (the C++ runtime keeps an emergency pool for
  // exceptions for the whole run); the program's two sites must be there with their numbers.
  std::vector<LeakLine> sites;
  const std::regex line_format(
      "poolalloc-debug:   ([0-9]+) bytes in ([0-9]+) blocks allocated at (.*)");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(lines[i], match, line_format)) << lines[i];
    sites.push_back({std::stoull(match[1]), std::stoull(match[2]), match[3]});
  }
  std::uint64_t bytes = 0, blocks = 0;
  int small = -1, large = -1;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    bytes += sites[i].bytes;
    blocks += sites[i].blocks;
    if (i > 0) {
      EXPECT_GE(sites[i - 1].bytes, sites[i].bytes) << "not largest first";
    }
    if (sites[i].site.rfind("leak_site_small+0x", 0) == 0) small = int(i);
    if (sites[i].site.rfind("leak_site_large+0x", 0) == 0) large = int(i);
  }
  EXPECT_EQ(std::stoull(header[1]), bytes);
  EXPECT_EQ(std::stoull(header[2]), blocks);
  EXPECT_EQ(std::stoull(header[3]), sites.size());
  ASSERT_GE(small, 0) << result.err;
  ASSERT_GE(large, 0) << result.err;
  EXPECT_LT(large, small);
  EXPECT_EQ(sites[std::size_t(large)].bytes, 5000u);
  EXPECT_EQ(sites[std::size_t(large)].blocks, 1u);
  EXPECT_EQ(sites[std::size_t(small)].bytes, 300u);
  EXPECT_EQ(sites[std::size_t(small)].blocks, 3u);
  EXPECT_NE(sites[std::size_t(small)].site.find("debug_helper)"), std::string::npos);
}

TEST(DebugLeakReport, OffByDefault) {
  const auto result = run_helper("leak", {});
  EXPECT_TRUE(exited_with(result, 0)) << result.status;
  EXPECT_EQ(result.err, "");
}

}  // namespace
