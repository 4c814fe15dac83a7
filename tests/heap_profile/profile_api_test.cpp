// The heap profile of a game that links libpoolalloc and drives it through the C API
// (poolalloc.h): sampling turned on and off by a call, a dump by a call, what it holds.
// profile_probe's api-* modes are the game.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "poolalloc/poolalloc.h"
#include "profile_test_util.hpp"

namespace {

using profile_test::figure_of;
using profile_test::go_installed;
using profile_test::pprof_top;
using profile_test::run_in;
using profile_test::ScratchDirectory;

const std::string kProbe = PROFILE_PROBE;
constexpr double kMiB = 1 << 20;

class ProfileApi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!go_installed()) GTEST_SKIP() << "go (golang-go) is not installed";
  }
  // The game's dump, read with -top at `index`: the figure of probe_live_site.
  double live_site(const std::string& mode, const std::string& index,
                   const std::string& environment = "") {
    EXPECT_EQ(run_in(directory_.path(), environment, kProbe + " " + mode), 0);
    std::string text;
    const double figure = figure_of(pprof_top(kProbe, directory_.path() + "/call.pb", index, &text),
                                    "probe_live_site");
    std::cout << text;
    return figure;
  }
  ScratchDirectory directory_;
};

TEST_F(ProfileApi, DumpByACallNamesTheGamesAllocatingFunction) {
  // 32 MiB in 64-byte blocks: four standard deviations (4.1 MiB each) either side.
  const double live = live_site("api-live", "inuse_space");
  EXPECT_GT(live, 15.6 * kMiB);
  EXPECT_LT(live, 48.4 * kMiB);
}

TEST_F(ProfileApi, FreesFromOtherThreadsTakeTheSamplesOutOfTheLiveHeap) {
  EXPECT_EQ(live_site("api-freed", "inuse_space"), 0);
  EXPECT_GT(live_site("api-freed", "alloc_space"), 15.6 * kMiB);
}

TEST_F(ProfileApi, SamplingTurnedOffTakesNoNewSamples) {
  EXPECT_EQ(live_site("api-off", "alloc_space"), 0);
}

TEST_F(ProfileApi, EachSampleCarriesTheMemoryTagOfItsMallocAsALabel) {
  ASSERT_EQ(run_in(directory_.path(), "", kProbe + " api-tagged"), 0);
  const std::string profile = directory_.path() + "/call.pb";
  std::string text;
  const auto ai = pprof_top(kProbe, profile, "inuse_space", &text, "-tagfocus=tag=AI");
  EXPECT_GT(figure_of(ai, "probe_live_site"), 15.6 * kMiB) << text;
  EXPECT_EQ(figure_of(ai, "probe_after_peak"), 0) << text;
  const auto others = pprof_top(kProbe, profile, "inuse_space", &text, "-tagignore=tag=AI");
  EXPECT_EQ(figure_of(others, "probe_live_site"), 0) << text;
  EXPECT_GT(figure_of(others, "probe_after_peak"), 15.6 * kMiB) << text;
}

TEST_F(ProfileApi, TheDebugBuildsDumpIsExactPerCallSite) {
  const std::string debug = "LD_PRELOAD=" POOLALLOC_DEBUG_LIBRARY;
  EXPECT_EQ(live_site("api-exact", "inuse_space", debug), 100 * 1000);
  EXPECT_EQ(live_site("api-exact", "inuse_objects", debug), 1000);
}

TEST_F(ProfileApi, FreesWhileAnotherThreadForksTakeTheirSamplesOut) {
  ASSERT_EQ(run_in(directory_.path(), "", kProbe + " api-fork-frees"), 0);
  const std::string profile = directory_.path() + "/call.pb";
  std::string text;
  EXPECT_EQ(figure_of(pprof_top(kProbe, profile, "inuse_space", &text), "probe_churn_site"), 0)
      << text;
  EXPECT_GT(figure_of(pprof_top(kProbe, profile, "alloc_space", &text), "probe_churn_site"), 0)
      << text;
}

// A free of nullptr while fork() held the samples' lock once left a slot of the frees deferred
// meanwhile that the next sample's record waited for forever.
TEST_F(ProfileApi, FreesOfNullWhileAnotherThreadForksLeaveTheProfileWorking) {
  ASSERT_EQ(run_in(directory_.path(), "", "timeout 60 " + kProbe + " api-fork-free-null"), 0);
  std::string text;
  EXPECT_GT(figure_of(pprof_top(kProbe, directory_.path() + "/call.pb", "alloc_space", &text),
                      "probe_churn_site"),
            0)
      << text;
}

// Sampling turned on by a call holds for every thread, also one whose thread cache serves each
// of its mallocs without a slow path (it frees each block before the next malloc): 64 MiB at a
// mean of 64 KiB, some 1,000 samples (a spread of 3 %).
TEST_F(ProfileApi, SamplingTurnedOnByACallHoldsForAThreadAlreadyLooping) {
  ASSERT_EQ(run_in(directory_.path(), "", kProbe + " api-late-worker"), 0);
  std::string text;
  const double sampled = figure_of(
      pprof_top(kProbe, directory_.path() + "/call.pb", "alloc_space", &text), "probe_churn_site");
  EXPECT_GT(sampled, 0.85 * 64 * kMiB) << text;
  EXPECT_LT(sampled, 1.15 * 64 * kMiB) << text;
}

// profiling.md: the allocator's own frames are left out, operator new's as malloc's: the bytes
// are the program's functions' that called it.
TEST_F(ProfileApi, AStackFromOperatorNewStartsAtItsCaller) {
  ASSERT_EQ(run_in(directory_.path(), "", kProbe + " api-new"), 0);
  std::string text;
  const auto flat = pprof_top(kProbe, directory_.path() + "/call.pb", "inuse_space", &text);
  EXPECT_GT(figure_of(flat, "probe_new_site"), 0.8 * 16 * kMiB) << text;
  EXPECT_GT(figure_of(flat, "probe_new_array_site"), 0.8 * 16 * kMiB) << text;
  EXPECT_EQ(figure_of(flat, "operator new"), 0) << text;
}

// poolalloc.h: a dump from a signal handler that interrupted the profile's own bookkeeping in the
// same thread (the debug build's: its heap's) returns EAGAIN rather than wait for that thread,
// itself.
TEST_F(ProfileApi, ADumpFromTheProgramsSignalHandlerNeverWaitsForItsOwnThread) {
  for (const std::string build : {"", "LD_PRELOAD=" POOLALLOC_DEBUG_LIBRARY})
    EXPECT_EQ(run_in(directory_.path(), build, "timeout 60 " + kProbe + " api-signal-dumps"), 0)
        << build;
}

// profiling.md: what poolalloc allocates for itself (the decay thread it starts, a lookup in
// glibc) is never a sample: no stack of the profile has a frame of the allocator's. (The thread
// that the program starts is the program's, sampled as any allocation.)
TEST_F(ProfileApi, WhatPoolallocAllocatesForItselfIsNeverSampled) {
  ASSERT_EQ(run_in(directory_.path(), "", kProbe + " api-own"), 0);
  std::string text;
  const auto flat = pprof_top(kProbe, directory_.path() + "/call.pb", "alloc_space", &text);
  EXPECT_GT(figure_of(flat, "probe_churn_site"), 0) << text;
  for (const char* own : {"poolalloc::", "dlopen"})
    EXPECT_EQ(text.find(own), std::string::npos) << own << "\n" << text;
}

TEST_F(ProfileApi, ABlockThatAFailedReallocLeavesStaysInUse) {
  // 16 blocks of 1 MiB, every one sampled (with the chance 1 - e^(-2^20)): exactly 16 MiB.
  EXPECT_EQ(live_site("api-realloc-fail", "inuse_space"), 16 * kMiB);
}

TEST_F(ProfileApi, AThreadsFirstMallocsAreSampledAsAnyOther) {
  // 8 threads, each with one block of 64 MiB, sampled with a chance of 1 - e^-128.
  EXPECT_EQ(live_site("api-threads-first", "inuse_objects"), 8);
}

TEST(ProfileApiErrors, AFifoThatNobodyReadsFailsAtOnceWithEnxio) {
  ScratchDirectory directory;
  const std::string fifo = directory.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  errno = 0;
  EXPECT_EQ(poolalloc_profile_dump(fifo.c_str()), -1);
  EXPECT_EQ(errno, ENXIO);
}

TEST(ProfileApiErrors, AnUnwritablePathReturnsMinusOneWithErrno) {
  errno = 0;
  EXPECT_EQ(poolalloc_profile_dump("/nonexistent-dir/heap.pb"), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST(ProfileApiErrors, AMeanAboveOneTebibyteIsRefusedWithEinval) {
  errno = 0;
  EXPECT_EQ(poolalloc_profile_sample((std::size_t{1} << 40) + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

// A sampled block of the pools' sizes waits as a spare after its free (for the next sample of its
// class): freed again there, it is reported, as glibc's free would have caught it.
TEST(ProfileApiDeathTest, ASampledBlockFreedTwiceIsReportedAsADoubleFree) {
  EXPECT_DEATH(
      {
        ASSERT_EQ(poolalloc_profile_sample(1), 0);  // every allocation sampled
        void* p = std::malloc(4096);
        std::free(p);
        std::free(p);
      },
      "^poolalloc: free\\(0x[0-9a-f]+\\): double free of the 4096-byte block of a heap-profile "
      "sample\n");
}

// Bytes glibc's main arena counts in use (its own mallinfo2: poolalloc's stands in front of it).
std::size_t glibc_bytes_in_use() {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(libc, nullptr);
  using Mallinfo2 = struct mallinfo2 (*)();
  auto* glibc_mallinfo2 = reinterpret_cast<Mallinfo2>(dlsym(libc, "mallinfo2"));
  EXPECT_NE(glibc_mallinfo2, nullptr);
  const std::size_t in_use = glibc_mallinfo2().uordblks;
  dlclose(libc);
  return in_use;
}

// 32 sampled blocks of 4 KiB, freed: they wait as spares, in use in glibc's eyes, until `release`
// gives them back.
void expect_spares_given_back_by(void (*release)()) {
  ASSERT_EQ(poolalloc_profile_sample(1), 0);  // every allocation sampled
  void* blocks[32];
  for (void*& block : blocks) block = std::malloc(4096);
  for (void* block : blocks) std::free(block);
  const std::size_t waiting = glibc_bytes_in_use();
  release();
  EXPECT_GE(waiting - glibc_bytes_in_use(), std::size_t{32} * 4096);
  ASSERT_EQ(poolalloc_profile_sample(0), 0);
}

// Resident bytes (/proc/self/statm's second figure).
std::size_t resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  EXPECT_NE(statm, nullptr);
  unsigned long pages = 0, resident = 0;
  EXPECT_EQ(std::fscanf(statm, "%lu %lu", &pages, &resident), 2);
  std::fclose(statm);
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// At the default mean: 1500 rounds of a 64 KiB buffer (glibc's) and a 4 KiB block (some 12 of the
// blocks sampled, glibc's too), freed newest first, as a request's arena is torn down. A sampled
// block waiting as a spare near the top of glibc's heap would keep glibc from trimming the
// buffers below it (96 MiB stayed): it goes back at the next buffer's free, and glibc trims.
TEST(ProfileSpares, ASpareKeepsNoneOfGlibcsHeapFromItsTrimAsTheProgramFreesItsBuffers) {
  ASSERT_EQ(poolalloc_profile_sample(512 * 1024), 0);
  constexpr std::size_t kRounds = 1500, kBuffer = std::size_t{64} << 10;
  std::vector<void*> buffers(kRounds), blocks(kRounds);
  const std::size_t before = resident_bytes();
  for (std::size_t i = 0; i < kRounds; ++i) {
    buffers[i] = std::malloc(kBuffer);
    blocks[i] = std::malloc(4096);
    ASSERT_TRUE(buffers[i] != nullptr && blocks[i] != nullptr);
    std::memset(buffers[i], 1, kBuffer);
    std::memset(blocks[i], 2, 4096);
  }
  for (std::size_t i = kRounds; i-- > 0;) {
    std::free(blocks[i]);
    std::free(buffers[i]);
  }
  const std::size_t freed = resident_bytes();
  ASSERT_EQ(poolalloc_profile_sample(0), 0);
  std::printf("RSS %zu MiB before, %zu MiB once 94 MiB of buffers were freed\n", before >> 20,
              freed >> 20);
  EXPECT_LT(freed, before + (std::size_t{32} << 20));
}

// A block of glibc's heap, above the pools' sizes, for a realloc to move or cut.
void* g_buffer = nullptr;

TEST(ProfileSpares, FreedSampledBlocksWaitAsSparesUntilAReallocOfAnotherBlockOutsideThePools) {
  g_buffer = std::malloc(std::size_t{64} << 10);
  ASSERT_NE(g_buffer, nullptr);
  expect_spares_given_back_by([] {
    // Sampled (every allocation is): the block moves into a sampled one, the old one is freed.
    g_buffer = std::realloc(g_buffer, std::size_t{40} << 10);
    ASSERT_NE(g_buffer, nullptr);
  });
  expect_spares_given_back_by([] {
    // Not sampled: glibc's realloc cuts the block's tail off in place.
    ASSERT_EQ(poolalloc_profile_sample(std::size_t{1} << 40), 0);
    g_buffer = std::realloc(g_buffer, std::size_t{8} << 10);
    ASSERT_NE(g_buffer, nullptr);
  });
  std::free(g_buffer);
}

TEST(ProfileSpares, FreedSampledBlocksWaitAsSparesUntilSamplingIsTurnedOff) {
  expect_spares_given_back_by([] { ASSERT_EQ(poolalloc_profile_sample(0), 0); });
}

TEST(ProfileSpares, FreedSampledBlocksWaitAsSparesUntilMallocTrim) {
  expect_spares_given_back_by([] { malloc_trim(0); });
}

}  // namespace
