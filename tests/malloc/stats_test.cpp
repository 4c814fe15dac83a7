// The statistics, figure by figure: exact per-class counts after a known sequence of
// allocations (the table once read each class's counters from the bin of the class below, and
// left the 32 KiB class out of the totals), and the reports under pressure: a cancelled thread,
// a pipe whose reader has gone, a thousand live threads, threads allocating while it is read,
// mallinfo past 2 GiB, malloc_info on a full disk.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"
#include "rss_workloads.hpp"

namespace malloc_test {
namespace {

// A table captured without allocating: written to a memfd, read back into a fixed buffer.
struct Capture {
  char text[64 << 10];
  std::size_t length = 0;
};

void capture_table(Capture& capture) {
  const int fd = memfd_create("poolalloc-table", MFD_CLOEXEC);
  poolalloc_print_stats(fd);
  capture.length = static_cast<std::size_t>(pread(fd, capture.text, sizeof capture.text - 1, 0));
  capture.text[capture.length] = '\0';
  close(fd);
}

struct Row {
  std::uint64_t requests = 0, frees = 0, live = 0;
};

// A size as the table writes it: "48 B", "1.125 KiB", "32 KiB".
std::uint64_t bytes_of(double figure, const char* unit) {
  const double scale = std::strcmp(unit, "KiB") == 0 ? 1024.0
                       : std::strcmp(unit, "B") == 0 ? 1.0
                                                     : 0.0;
  return static_cast<std::uint64_t>(figure * scale);
}

// Rows by block size, from "class block-size requests frees live peak spans held".
std::map<std::uint64_t, Row> rows_of(const Capture& capture) {
  std::map<std::uint64_t, Row> rows;
  const char* line = capture.text;
  while (line != nullptr && *line != '\0') {
    unsigned long long cls = 0, requests = 0, frees = 0, live = 0;
    double size = 0;
    char unit[4] = {};
    if (std::sscanf(line, "%llu %lf %3s %llu %llu %llu", &cls, &size, unit, &requests, &frees,
                    &live) == 6)
      rows[bytes_of(size, unit)] = Row{requests, frees, live};
    line = std::strchr(line, '\n');
    if (line != nullptr) ++line;
  }
  return rows;
}

std::uint64_t total_of(const Capture& capture, const char* label) {
  const char* at = std::strstr(capture.text, label);
  if (at == nullptr) return UINT64_MAX;
  return std::strtoull(at + std::strlen(label), nullptr, 10);
}

struct Delta {
  std::uint64_t requests, frees, live;
  bool operator==(const Delta&) const = default;
};
std::ostream& operator<<(std::ostream& out, const Delta& d) {
  return out << "{requests " << d.requests << ", frees " << d.frees << ", live " << d.live << "}";
}

Delta delta(const Capture& before, const Capture& after, std::uint64_t size) {
  const Row a = rows_of(before)[size];
  const Row b = rows_of(after)[size];
  return {b.requests - a.requests, b.frees - a.frees, b.live - a.live};
}

constexpr std::uint64_t k32KiB = 32768;

Capture g_before, g_during, g_end, g_after;
poolalloc_stats g_stats_before, g_stats_during;

// In a thread of its own, so that its cache starts empty; nothing else runs meanwhile.
void known_sequence() {
  void* small[10];
  void* medium[5];
  void* large[3];
  capture_table(g_before);
  poolalloc_get_stats(&g_stats_before);
  for (void*& p : small) p = malloc(opaque<size_t>(16));
  for (void*& p : medium) p = malloc(opaque<size_t>(48));
  for (void*& p : large) p = malloc(opaque<size_t>(k32KiB));
  for (int i = 0; i < 4; ++i) free(small[i]);
  for (int i = 0; i < 2; ++i) free(medium[i]);
  free(large[0]);
  capture_table(g_during);
  poolalloc_get_stats(&g_stats_during);
  for (int i = 4; i < 10; ++i) free(small[i]);
  for (int i = 2; i < 5; ++i) free(medium[i]);
  for (int i = 1; i < 3; ++i) free(large[i]);
  capture_table(g_end);
}

TEST(StatsPerClass, ExactFiguresAfterAKnownSequence) {
  // A program that runs threads gets the decay thread, whose creation allocates (glibc's thread
  // descriptor): a thread of the program's own starts it first and stays, so that the decay
  // thread stays too, and the sequence's thread counts its own requests alone.
  const ThreadOfItsOwn companion;
  ASSERT_TRUE(decay_thread_started());
  std::thread(known_sequence).join();
  // The thread has exited: its cache went back to the central lists. (std::thread's own state,
  // freed as the thread ends, is a 16-byte block: that class is not compared across the exit.)
  capture_table(g_after);

  EXPECT_EQ(delta(g_before, g_during, 16), (Delta{10, 4, 6})) << g_during.text;
  EXPECT_EQ(delta(g_before, g_during, 48), (Delta{5, 2, 3})) << g_during.text;
  EXPECT_EQ(delta(g_before, g_during, k32KiB), (Delta{3, 1, 2})) << g_during.text;
  EXPECT_EQ(total_of(g_during, "pooled requests: ") - total_of(g_before, "pooled requests: "), 18u);
  EXPECT_EQ(g_stats_during.pooled_requests - g_stats_before.pooled_requests, 18u);
  EXPECT_EQ(g_stats_during.pooled_frees - g_stats_before.pooled_frees, 7u);
  EXPECT_EQ(g_stats_during.pooled_live - g_stats_before.pooled_live, 11u);

  EXPECT_EQ(delta(g_before, g_end, 16), (Delta{10, 10, 0})) << g_end.text;
  EXPECT_EQ(delta(g_before, g_end, 48), (Delta{5, 5, 0})) << g_end.text;
  EXPECT_EQ(delta(g_before, g_end, k32KiB), (Delta{3, 3, 0})) << g_end.text;
  EXPECT_EQ(delta(g_end, g_after, 48), (Delta{0, 0, 0})) << g_after.text;
  EXPECT_EQ(delta(g_end, g_after, k32KiB), (Delta{0, 0, 0})) << g_after.text;
}

// The rows and the totals come from one reading of the counters.
TEST(StatsPerClass, TotalsAreTheSumOfTheRows) {
  void* p = malloc(opaque<size_t>(k32KiB));
  Capture table;
  capture_table(table);
  free(p);
  std::uint64_t requests = 0;
  for (const auto& [size, row] : rows_of(table)) {
    requests += row.requests;
    EXPECT_EQ(row.frees + row.live, row.requests) << size;
  }
  EXPECT_EQ(requests, total_of(table, "pooled requests: ")) << table.text;
  EXPECT_GE(rows_of(table)[k32KiB].live, 1u) << table.text;
}

// What one stretch of calls changed in poolalloc_get_stats(): the calls run in this thread
// alone, so the differences are theirs.
struct Counts {
  std::uint64_t pooled_requests, pooled_frees, system_requests, system_bytes;
  bool operator==(const Counts&) const = default;
};
std::ostream& operator<<(std::ostream& out, const Counts& c) {
  return out << "{pooled requests " << c.pooled_requests << ", pooled frees " << c.pooled_frees
             << ", system requests " << c.system_requests << ", system bytes " << c.system_bytes
             << "}";
}

template <class Calls>
Counts counts_of(const Calls& calls) {
  poolalloc_stats before{}, after{};
  poolalloc_get_stats(&before);
  calls();
  poolalloc_get_stats(&after);
  return {after.pooled_requests - before.pooled_requests, after.pooled_frees - before.pooled_frees,
          after.system_requests - before.system_requests, after.system_bytes - before.system_bytes};
}

constexpr std::size_t kForwarded = 40000;  // above the largest class: glibc's

// statistics.md: the system-forwarded line counts the allocations passed to glibc and the bytes
// they asked for. One malloc and ten reallocs that grow the block to 39 MiB are eleven of them
// (they once showed as one request of 40,000 bytes).
TEST(StatsSystemForwarded, EveryReallocOfAGlibcBlockIsARequest) {
  std::uint64_t bytes = kForwarded;
  const Counts counts = counts_of([&] {
    void* p = malloc(opaque(kForwarded));
    for (std::size_t size = kForwarded, i = 0; i < 10; ++i) {
      size = size * 9 / 4;
      bytes += size;
      p = realloc(p, opaque(size));
      ASSERT_NE(p, nullptr);
    }
    free(p);
  });
  EXPECT_EQ(counts, (Counts{0, 0, 11, bytes}));
}

// A realloc that moves a block between the pools and glibc counts where the new block comes
// from, and the old one is given back: pools to glibc is a pooled free and a system request; a
// glibc block made small stays in glibc, a system request of the new size.
TEST(StatsSystemForwarded, ReallocBetweenThePoolsAndGlibc) {
  void* p = nullptr;
  EXPECT_EQ(counts_of([&] { p = malloc(opaque<size_t>(100)); }), (Counts{1, 0, 0, 0}));
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque<size_t>(110)); }), (Counts{0, 0, 0, 0}))
      << "the same class: the block stays, no request";
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque<size_t>(1000)); }), (Counts{1, 1, 0, 0}));
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque(kForwarded)); }), (Counts{0, 1, 1, kForwarded}));
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque<size_t>(100)); }), (Counts{0, 0, 1, 100}));
  EXPECT_EQ(counts_of([&] { free(p); }), (Counts{0, 0, 0, 0}));
}

// realloc(p, 0) frees p: no request. realloc(NULL, n) is a malloc.
TEST(StatsSystemForwarded, ReallocToZeroAndFromNull) {
  void* p = nullptr;
  EXPECT_EQ(counts_of([&] { p = realloc(nullptr, opaque(kForwarded)); }),
            (Counts{0, 0, 1, kForwarded}));
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque<size_t>(0)); }), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(counts_of([&] { p = realloc(nullptr, opaque<size_t>(64)); }), (Counts{1, 0, 0, 0}));
  EXPECT_EQ(counts_of([&] { p = realloc(p, opaque<size_t>(0)); }), (Counts{0, 1, 0, 0}));
}

// calloc and every aligned form: the bytes asked for, not the alignment's padding.
TEST(StatsSystemForwarded, CallocAndTheAlignedForms) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  constexpr std::size_t kAlignment = std::size_t{64} << 10;  // above every class: glibc's
  std::vector<void*> blocks;
  blocks.reserve(6);
  const Counts counts = counts_of([&] {
    blocks.push_back(calloc(opaque<size_t>(4), opaque(kForwarded / 4)));
    blocks.push_back(memalign(opaque(kAlignment), opaque<size_t>(100)));
    blocks.push_back(aligned_alloc(opaque(kAlignment), opaque<size_t>(200)));
    void* aligned = nullptr;
    EXPECT_EQ(posix_memalign(&aligned, opaque(kAlignment), opaque<size_t>(300)), 0);
    blocks.push_back(aligned);
    blocks.push_back(valloc(opaque(kForwarded)));
    blocks.push_back(pvalloc(opaque(kForwarded)));
    for (void* block : blocks) free(block);
  });
  const std::size_t pvalloc_bytes = (kForwarded + page - 1) / page * page;
  EXPECT_EQ(counts, (Counts{0, 0, 6, kForwarded + 100 + 200 + 300 + kForwarded + pvalloc_bytes}));
}

// A call that fails serves nothing: no request, in either figure, and a failed realloc leaves
// the block and the counts as they were.
TEST(StatsSystemForwarded, FailedCallsAreNotCounted) {
  constexpr std::size_t kTooLarge = std::size_t{1} << 62;
  void* p = malloc(opaque(kForwarded));
  const Counts counts = counts_of([&] {
    EXPECT_EQ(malloc(opaque(kTooLarge)), nullptr);
    EXPECT_EQ(calloc(opaque<size_t>(2), opaque(kTooLarge)), nullptr);  // overflows
    EXPECT_EQ(calloc(opaque<size_t>(1), opaque(kTooLarge)), nullptr);
    EXPECT_EQ(realloc(p, opaque(kTooLarge)), nullptr);
    EXPECT_EQ(memalign(opaque<size_t>(4096), opaque(kTooLarge)), nullptr);
  });
  free(p);
  EXPECT_EQ(counts, (Counts{0, 0, 0, 0}));
}

// pooled_peak is the most blocks out of their spans at once over all classes, not the sum of
// each class's own peak: 10,000 blocks of each of four classes, one class after the other with
// malloc_trim(0) between them, are 10,000 at once (plus what the test framework holds), not
// 40,000.
TEST(StatsPeak, ThePeakIsOfBlocksOutAtOnce) {
  poolalloc_stats before{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  std::vector<void*> blocks(10000);
  for (size_t size : {1100, 1300, 1600, 2000}) {  // classes the test framework hardly uses
    for (void*& block : blocks) block = malloc(opaque(size));
    for (void* block : blocks) free(block);
    malloc_trim(0);  // the blocks go back into their spans
  }
  poolalloc_stats after{};
  ASSERT_EQ(poolalloc_get_stats(&after), 0);
  EXPECT_GE(after.pooled_peak, 10000u);
  EXPECT_LT(after.pooled_peak - before.pooled_peak, 15000u);
}

// statistics.md: a thread gets its cache at its first allocation, or at its first free of a
// pooled block (a consumer thread that only frees what others allocated).
TEST(StatsThreadCaches, AThreadThatOnlyFreesGetsACache) {
  void* block = malloc(opaque<size_t>(64));
  poolalloc_stats before{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  poolalloc_stats during{};
  std::thread([&] {
    free(block);
    poolalloc_get_stats(&during);
  }).join();
  EXPECT_EQ(during.thread_caches, before.thread_caches + 1);
}

// In a child of fork() only the forking thread lives on: the parent's other threads' caches are
// not counted there.
TEST(StatsFork, AChildCountsOnlyItsOwnThreadCache) {
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      free(malloc(opaque<size_t>(64)));
      ++ready;
      while (!stop.load()) sched_yield();
    });
  }
  while (ready.load() < kThreads) sched_yield();
  free(malloc(opaque<size_t>(64)));
  const pid_t pid = fork();
  if (pid == 0) {
    poolalloc_stats stats{};
    poolalloc_get_stats(&stats);
    _exit(stats.thread_caches == 1 ? 0 : static_cast<int>(stats.thread_caches));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  stop = true;
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child counted that many thread caches";
}

// The blocks that the parent's other threads had cached at fork() stay in their bins in the
// child, unused for ever: they were freed, so the child's statistics must count them neither as
// live nor take them off the parent's frees ("a child of fork() starts with its parent's
// counts"). A thread frees 100 blocks of 1408 bytes into its cache and waits; a child forked
// then must read the parent's live and frees.
TEST(StatsFork, TheParentsOtherThreadsCachedBlocksAreNotLiveInTheChild) {
  std::atomic<int> stage{0};
  std::thread idle([&] {
    void* blocks[100];
    for (void*& block : blocks) block = malloc(opaque<size_t>(1400));
    for (void* block : blocks) free(block);
    stage.store(1);
    while (stage.load() != 2) sched_yield();
  });
  while (stage.load() != 1) sched_yield();
  poolalloc_stats parent{};
  poolalloc_get_stats(&parent);
  const pid_t pid = fork();
  if (pid == 0) {
    poolalloc_stats child{};
    poolalloc_get_stats(&child);
    const uint64_t extra_live =
        child.pooled_live > parent.pooled_live ? child.pooled_live - parent.pooled_live : 0;
    _exit(child.pooled_live == parent.pooled_live && child.pooled_frees == parent.pooled_frees
              ? 0
              : static_cast<int>(std::min<uint64_t>(extra_live, 100) + 1));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  stage.store(2);
  idle.join();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the child counted " << WEXITSTATUS(status) - 1
      << " more live blocks than its parent (blocks cached by the parent's other threads)";
}

// Empty spans kept for reuse still hold resident pages: the resident figure must count them.
// A thread fills 256 blocks of 32 KiB (64 spans of 128 KiB), writes them, frees them and exits,
// so its cache goes back, and what the class's central stack cannot take (4 MiB) goes into the
// spans, which empty out into the retained list. Whatever of those spans is
// resident (mincore, which faults nothing in) must be within resident_bytes, and mallinfo2's
// arena must cover the spans of the classes and the retained ones.
TEST(StatsResident, RetainedEmptySpansAreCounted) {
  constexpr std::size_t kSpan = std::size_t{128} << 10;
  std::set<std::uintptr_t> spans;
  std::thread([&spans] {
    std::vector<void*> blocks;
    for (int i = 0; i < 256; ++i) {
      blocks.push_back(malloc(opaque<size_t>(k32KiB)));
      std::memset(blocks.back(), 1, k32KiB);
      spans.insert(reinterpret_cast<std::uintptr_t>(blocks.back()) & ~(kSpan - 1));
    }
    for (void* p : blocks) free(p);
  }).join();
  poolalloc_stats stats{};
  ASSERT_EQ(poolalloc_get_stats(&stats), 0);
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t resident = 0;
  std::vector<unsigned char> pages(kSpan / page);
  for (std::uintptr_t span : spans) {
    ASSERT_EQ(mincore(reinterpret_cast<void*>(span), kSpan, pages.data()), 0);
    for (unsigned char in_core : pages) resident += (in_core & 1) != 0 ? page : 0;
  }
  EXPECT_GT(stats.retained_bytes, 0u) << "the test needs spans that emptied";
  EXPECT_GE(stats.resident_bytes, resident)
      << "the spans of this test alone hold " << resident << " resident bytes";
  EXPECT_GE(mallinfo2().arena, stats.bytes_held + stats.retained_bytes);
}

// A cancellation pending in a thread that prints: glibc's malloc_stats disables cancellation
// while it writes; the whole table must come out, from both functions.
int g_captured_stderr = -1;
int g_captured_direct = -1;

void* print_with_cancel_pending(void*) {
  pthread_cancel(pthread_self());  // deferred: acted on at the next cancellation point
  malloc_stats();
  poolalloc_print_stats(g_captured_direct);
  pthread_testcancel();
  return nullptr;
}

std::string contents(int fd) {
  std::string text(static_cast<std::size_t>(lseek(fd, 0, SEEK_END)), '\0');
  pread(fd, text.data(), text.size(), 0);
  return text;
}

// malloc.md: "malloc_stats() writes the same table to stderr" as poolalloc_print_stats(fd):
// both written one after the other, with nothing allocated between them, byte for byte.
// The figures of the two tables may differ (glibc's report allocates as it prints); their lines
// may not, save for the figures.
std::string without_figures(const std::string& text) {
  std::string shape;
  for (const char c : text) {
    if (c < '0' || c > '9')
      shape += c;
    else if (shape.empty() || shape.back() != '#')
      shape += '#';
  }
  return shape;
}

TEST(MallocStats, WritesTheTableOfPoolallocPrintStatsThenGlibcsReportOnStderr) {
  void* block = malloc(opaque<std::size_t>(64));
  const int stderr_capture = memfd_create("stderr", MFD_CLOEXEC);
  const int direct = memfd_create("direct", MFD_CLOEXEC);
  const int saved_stderr = dup(STDERR_FILENO);
  dup2(stderr_capture, STDERR_FILENO);
  malloc_stats();
  dup2(saved_stderr, STDERR_FILENO);
  poolalloc_print_stats(direct);
  close(saved_stderr);
  const std::string via_malloc_stats = contents(stderr_capture);
  const std::string via_print_stats = contents(direct);
  close(stderr_capture);
  close(direct);
  free(block);
  EXPECT_NE(via_print_stats.find("\npooled requests: "), std::string::npos) << via_print_stats;
  const std::size_t glibcs = via_malloc_stats.find("Arena 0:\n");
  ASSERT_NE(glibcs, std::string::npos) << via_malloc_stats;
  EXPECT_EQ(without_figures(via_malloc_stats.substr(0, glibcs)), without_figures(via_print_stats));
  EXPECT_NE(via_malloc_stats.find("max mmap bytes", glibcs), std::string::npos) << via_malloc_stats;
}

TEST(StatsOutput, PrintsTheWholeTableWithACancellationPending) {
  g_captured_stderr = memfd_create("stderr", MFD_CLOEXEC);
  g_captured_direct = memfd_create("direct", MFD_CLOEXEC);
  const int saved_stderr = dup(STDERR_FILENO);
  dup2(g_captured_stderr, STDERR_FILENO);
  pthread_t thread;
  void* result = nullptr;
  const int created = pthread_create(&thread, nullptr, print_with_cancel_pending, nullptr);
  if (created == 0) pthread_join(thread, &result);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  ASSERT_EQ(created, 0);
  EXPECT_EQ(result, PTHREAD_CANCELED) << "the cancellation was lost";
  const std::string via_malloc_stats = contents(g_captured_stderr);
  const std::string via_print_stats = contents(g_captured_direct);
  EXPECT_NE(via_malloc_stats.find("pooled requests: "), std::string::npos) << via_malloc_stats;
  EXPECT_NE(via_print_stats.find("pooled requests: "), std::string::npos) << via_print_stats;
  close(g_captured_stderr);
  close(g_captured_direct);
}

// glibc's tst-malloc-stats-cancellation, ported: a thread released with a cancellation pending
// calls malloc_stats(), then fputs() to stderr. The whole of malloc_stats' output must come out
// (the table, then glibc's report of its arenas, which ends with "max mmap bytes"), and the
// thread must be cancelled at the fputs, which writes nothing. stderr is a pipe (writes to a
// memory stream are no cancellation points), drained by a thread of its own.
struct Drained {
  int fd;
  std::string text;
};

void* drain(void* arg) {
  auto* drained = static_cast<Drained*>(arg);
  char buffer[4096];
  for (ssize_t n; (n = read(drained->fd, buffer, sizeof buffer)) > 0;)
    drained->text.append(buffer, static_cast<std::size_t>(n));
  return nullptr;
}

void* malloc_stats_then_fputs(void* gate) {
  pthread_barrier_wait(static_cast<pthread_barrier_t*>(gate));  // not a cancellation point
  malloc_stats();
  fputs("this call should trigger cancellation\n", stderr);
  return nullptr;
}

TEST(StatsOutput, MallocStatsWritesItsWholeReportWithACancellationPending) {
  free(malloc(opaque<size_t>(1)));  // something in the table
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_CLOEXEC), 0);
  const int saved_stderr = dup(STDERR_FILENO);
  dup2(ends[1], STDERR_FILENO);
  close(ends[1]);
  Drained drained{ends[0], {}};
  pthread_t drainer, thread;
  ASSERT_EQ(pthread_create(&drainer, nullptr, drain, &drained), 0);
  pthread_barrier_t gate;
  pthread_barrier_init(&gate, nullptr, 2);
  void* result = nullptr;
  const int created = pthread_create(&thread, nullptr, malloc_stats_then_fputs, &gate);
  if (created == 0) {
    pthread_cancel(thread);
    pthread_barrier_wait(&gate);
    pthread_join(thread, &result);
  }
  dup2(saved_stderr, STDERR_FILENO);  // the pipe's last writing end closes: the drainer ends
  close(saved_stderr);
  pthread_join(drainer, nullptr);
  close(ends[0]);
  pthread_barrier_destroy(&gate);
  ASSERT_EQ(created, 0);
  EXPECT_EQ(result, PTHREAD_CANCELED) << "the cancellation was lost";
  const std::string& text = drained.text;
  const std::size_t table_end = text.find("\nresident in RAM, of both: ");
  const std::size_t glibc_end = text.find("max mmap bytes");
  EXPECT_NE(table_end, std::string::npos) << text;
  EXPECT_NE(glibc_end, std::string::npos) << text;
  EXPECT_LT(table_end, glibc_end) << text;
  EXPECT_EQ(text.find("this call should trigger cancellation"), std::string::npos) << text;
}

void* malloc_info_with_cancel_pending(void* stream) {
  pthread_cancel(pthread_self());
  malloc_info(0, static_cast<FILE*>(stream));
  pthread_testcancel();
  return nullptr;
}

// malloc_info writes to a FILE*, whose writes are cancellation points: the whole document comes
// out, and the thread is cancelled after it.
TEST(MallocInfo, WritesTheWholeDocumentWithACancellationPending) {
  const int fd = memfd_create("malloc_info", MFD_CLOEXEC);
  FILE* stream = fdopen(fd, "w");
  ASSERT_NE(stream, nullptr);
  setvbuf(stream, nullptr, _IONBF, 0);  // every piece is a write(2)
  pthread_t thread;
  void* result = nullptr;
  ASSERT_EQ(pthread_create(&thread, nullptr, malloc_info_with_cancel_pending, stream), 0);
  pthread_join(thread, &result);
  const std::string text = contents(fd);
  fclose(stream);
  EXPECT_EQ(result, PTHREAD_CANCELED) << "the cancellation was lost";
  EXPECT_EQ(text.rfind("<malloc version=\"1\">\n", 0), 0u) << text;
  EXPECT_TRUE(text.ends_with("</malloc>\n")) << text;
}

bool sigpipe_pending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

// The default action of SIGPIPE ends the process: printing to a pipe nobody reads must not.
TEST(StatsOutput, APipeWithoutReaderRaisesNoSignal) {
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  close(ends[0]);
  sigset_t mask_before, mask_after;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask_before);
  errno = 4321;
  poolalloc_print_stats(ends[1]);
  const int error = errno;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask_after);
  close(ends[1]);
  EXPECT_EQ(error, 4321);
  EXPECT_FALSE(sigpipe_pending());
  EXPECT_EQ(sigismember(&mask_before, SIGPIPE), sigismember(&mask_after, SIGPIPE));
}

// A SIGPIPE the program itself had pending (blocked) stays pending: only ours is taken back.
TEST(StatsOutput, TheProgramsOwnPendingSigpipeIsKept) {
  sigset_t pipe_only, old_mask;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  raise(SIGPIPE);
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  close(ends[0]);
  poolalloc_print_stats(ends[1]);
  close(ends[1]);
  EXPECT_TRUE(sigpipe_pending());
  const timespec no_wait{};
  sigtimedwait(&pipe_only, nullptr, &no_wait);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
}

// Figures read while other threads allocate are not one snapshot, but none may wrap around.
TEST(StatsUnderLoad, FiguresStayInRangeWhileThreadsAllocate) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&stop, t] {
      void* held[64] = {};
      for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        void*& slot = held[(i * 7 + t) % 64];
        free(slot);
        slot = malloc(opaque<size_t>(16 + (i * 37 + t * 101) % 4000));
      }
      for (void* p : held) free(p);
    });
  }
  static Capture table;
  bool in_range = true;
  std::uint64_t largest = 0;
  for (int round = 0; round < 200; ++round) {
    poolalloc_stats stats{};
    poolalloc_get_stats(&stats);
    capture_table(table);
    for (std::uint64_t value : {stats.pooled_requests, stats.pooled_frees, stats.pooled_live})
      largest = std::max(largest, value);
    in_range = in_range && stats.pooled_live <= stats.pooled_requests &&
               stats.pooled_frees <= stats.pooled_requests && largest < (std::uint64_t{1} << 48);
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(in_range) << "largest figure " << largest;
  for (const auto& [size, row] : rows_of(table)) {
    EXPECT_LT(row.frees, std::uint64_t{1} << 48) << size << "\n" << table.text;
    EXPECT_LE(row.live, row.requests) << size;
  }
}

// A thousand threads alive, each holding one block of a class nothing else uses here.
TEST(StatsUnderLoad, AThousandLiveThreadsAreCountedExactly) {
  constexpr unsigned kThreads = 1000;
  constexpr std::uint64_t kClass = 24576;
  static Capture before, during, after;
  capture_table(before);
  pthread_barrier_t allocated, release;
  pthread_barrier_init(&allocated, nullptr, kThreads + 1);
  pthread_barrier_init(&release, nullptr, kThreads + 1);
  struct Shared {
    pthread_barrier_t* allocated;
    pthread_barrier_t* release;
  } shared{&allocated, &release};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  std::vector<pthread_t> threads(kThreads);
  capture_table(before);
  for (pthread_t& thread : threads) {
    ASSERT_EQ(pthread_create(
                  &thread, &attr,
                  [](void* arg) -> void* {
                    auto* s = static_cast<Shared*>(arg);
                    void* block = malloc(opaque<size_t>(24000));
                    pthread_barrier_wait(s->allocated);
                    pthread_barrier_wait(s->release);
                    free(block);
                    return nullptr;
                  },
                  &shared),
              0);
  }
  pthread_barrier_wait(&allocated);
  capture_table(during);
  pthread_barrier_wait(&release);
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  capture_table(after);
  pthread_attr_destroy(&attr);
  pthread_barrier_destroy(&allocated);
  pthread_barrier_destroy(&release);
  EXPECT_EQ(delta(before, during, kClass), (Delta{kThreads, 0, kThreads})) << during.text;
  EXPECT_GE(total_of(during, "thread caches in use: "), kThreads);
  EXPECT_EQ(delta(before, after, kClass), (Delta{kThreads, kThreads, 0})) << after.text;
}

// mallinfo (int fields) reports the pools too, and a figure past INT_MAX saturates.
TEST(Mallinfo, ReportsThePoolsAndSaturatesPast2GiB) {
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(malloc(opaque<size_t>(1000)));
  void* huge = malloc(opaque<size_t>(3) << 30);  // mmapped by glibc, never touched
  ASSERT_NE(huge, nullptr);
  (void)mallinfo2();  // the first call looks glibc's function up
  const struct mallinfo2 wide = mallinfo2();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const struct mallinfo narrow = mallinfo();  // deprecated by glibc for this very overflow
#pragma GCC diagnostic pop
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  free(huge);
  for (void* p : blocks) free(p);
  EXPECT_GE(wide.hblkhd, size_t{3} << 30);
  EXPECT_EQ(narrow.hblkhd, INT_MAX);
  EXPECT_GE(wide.arena, stats.bytes_held);
  EXPECT_GE(static_cast<std::size_t>(narrow.arena), stats.bytes_held);
  EXPECT_GE(static_cast<std::size_t>(narrow.uordblks), 1000u * 1000u);
  auto clamp = [](std::size_t v) { return v > INT_MAX ? INT_MAX : static_cast<int>(v); };
  EXPECT_EQ(narrow.arena, clamp(wide.arena));
  EXPECT_EQ(narrow.hblks, clamp(wide.hblks));
  EXPECT_EQ(narrow.uordblks, clamp(wide.uordblks));
  EXPECT_EQ(narrow.fordblks, clamp(wide.fordblks));
}

std::string malloc_info_text() {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  EXPECT_EQ(malloc_info(0, stream), 0);
  fclose(stream);
  std::string result(text, length);
  free(text);
  return result;
}

std::uint64_t xml_figure(const std::string& text, const std::string& element) {
  // The last occurrence: the document's totals come after the heaps.
  const std::size_t at = text.rfind(element);
  if (at == std::string::npos) return UINT64_MAX;
  return std::strtoull(text.c_str() + at + element.size(), nullptr, 10);
}

TEST(MallocInfo, GlibcsDocumentWithThePoolsAdded) {
  void* p = malloc(opaque<size_t>(16));
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  const std::string text = malloc_info_text();
  free(p);
  EXPECT_EQ(text.rfind("<malloc version=\"1\">\n<heap nr=\"0\">\n", 0), 0u) << text;
  EXPECT_TRUE(text.ends_with("</malloc>\n")) << text;
  EXPECT_NE(text.find("<size from=\"16\" to=\"16\" total=\""), std::string::npos) << text;
  EXPECT_GE(xml_figure(text, "<system type=\"current\" size=\""), stats.bytes_held) << text;
  EXPECT_GE(xml_figure(text, "<aspace type=\"total\" size=\""), stats.bytes_held) << text;
  FILE* stream = fopen("/dev/null", "w");
  errno = 0;
  EXPECT_EQ(malloc_info(1, stream), EINVAL);  // glibc 2.36 returns it, and leaves errno alone
  EXPECT_EQ(errno, 0);
  fclose(stream);
}

// A stream that cannot be written (a full disk): an error at worst, no crash, no hang.
TEST(MallocInfo, AFullDiskIsAnErrorAndNothingWorse) {
  FILE* full = fopen("/dev/full", "w");
  ASSERT_NE(full, nullptr);
  setvbuf(full, nullptr, _IONBF, 0);
  EXPECT_EQ(malloc_info(0, full), -1);
  fclose(full);
  void* p = malloc(opaque<size_t>(64));  // the allocator still works
  EXPECT_NE(poolalloc_owns(p), 0);
  free(p);
}

}  // namespace
}  // namespace malloc_test
