// Blocks above 32 KiB go to glibc, whose heaps then hold nothing else: poolalloc sets glibc's
// thresholds so that the top of such a heap is not handed back to the OS and faulted in again
// each time its blocks are freed (src/system_forwarding.cpp), and leaves them to a program that
// sets them itself with mallopt. Each case runs in a child process, so that what glibc's heap
// and thresholds went through in one does not reach the other.
#include <malloc.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

// Rounds of 8 blocks of 200 KiB, all live at once (1.6 MiB), touched, then freed: the minor
// page faults of the last `rounds - 1` rounds (the first one faults the memory in).
long faults_of_rounds(int rounds) {
  constexpr size_t kSize = 200 << 10;
  constexpr int kBlocks = 8;
  long faults = 0;
  for (int round = 0; round < rounds; ++round) {
    const long before = minor_faults();
    void* blocks[kBlocks];
    for (void*& block : blocks) {
      block = malloc(opaque(kSize));
      if (block != nullptr) std::memset(block, 1, kSize);
    }
    for (void* block : blocks) free(block);
    if (round != 0) faults += minor_faults() - before;
  }
  return faults;
}

// Runs `body` in a child; its exit status: 0 when what it checks holds.
int in_child(int (*body)()) {
  const pid_t child = fork();
  if (child == 0) _exit(body());
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// mimalloc-bench's mstress in small: glibc's rule alone (a 200 KiB block mapped and unmapped
// sets its trim threshold to 400 KiB) hands the heap's free 1.6 MiB top back after every round
// and faults it in at the next: 7,024 faults over 19 rounds (glibc 2.36 alone: the same, as
// its heap holds nothing else here either); poolalloc's thresholds: 50.
TEST(LargeBlocks, FreedHeapTopIsNotFaultedInAgain) {
  const int status = in_child([] {
    const long faults = faults_of_rounds(20);
    std::printf("%ld page faults in 19 rounds of 8 x 200 KiB\n", faults);
    std::fflush(stdout);  // the child leaves with _exit
    return faults < 19 * 40 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

// A program's own mmap threshold holds: 200 KiB blocks above it are mapped at each malloc and
// unmapped at each free (50 faults each).
TEST(LargeBlocks, ProgramsMalloptThresholdHolds) {
  const int status = in_child([] {
    if (mallopt(M_MMAP_THRESHOLD, 64 << 10) != 1) return 2;
    const long faults = faults_of_rounds(20);
    std::printf("%ld page faults in 19 rounds of 8 x 200 KiB\n", faults);
    std::fflush(stdout);  // the child leaves with _exit
    return faults > 19 * 8 * 40 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

// A program that sets the mmap threshold alone gets glibc's default trim threshold back with
// it, as under glibc alone, not poolalloc's 8 MiB: the heap's free 1.6 MiB top, over the
// default, goes back to the OS after each round and is faulted in again at the next (about 400
// faults a round; poolalloc's threshold left in force: about 50 in all).
TEST(LargeBlocks, ProgramsMmapThresholdAloneBringsBackGlibcsTrimThreshold) {
  const int status = in_child([] {
    free(malloc(opaque<size_t>(400 << 10)));  // poolalloc raises its thresholds
    if (mallopt(M_MMAP_THRESHOLD, 256 << 10) != 1) return 2;
    const long faults = faults_of_rounds(20);
    std::printf("%ld page faults in 19 rounds of 8 x 200 KiB\n", faults);
    std::fflush(stdout);  // the child leaves with _exit
    return faults > 19 * 200 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace malloc_test
