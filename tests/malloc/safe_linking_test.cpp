// The links between free blocks cannot be forged by a write into a freed block (a use after
// free, or an overflow of the block before it): malloc never hands out the address such a
// write names. Each scenario runs in a thread of its own, whose cache starts empty, so that the
// bin's order is known: after malloc(r), malloc(p) and free(r), free(p), p links to r.
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

// The report of a free list of the 64-byte class that leads to `target`, a regex: the target is
// allocated in the forked child.
std::string corrupted_list_of_64(const std::string& target) {
  return "^poolalloc: the free list of size class 3 \\(64-byte blocks\\) is corrupted: it leads "
         "to " +
         target +
         ", which is not a free block of the class \\(a freed block was written to: a use after "
         "free, or an overflow of the block before it\\)\n";
}

void run_in_a_new_thread(void (*scenario)()) {
  std::thread(scenario).join();
}

class SafeLinkingDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

void* g_target = nullptr;  // the live block the forged links name

// The overflow writes a plain pointer to a live block over the freed block's link.
void forge_plain_pointer() {
  void* r = malloc(opaque<size_t>(64));
  auto* p = static_cast<void**>(malloc(opaque<size_t>(64)));
  g_target = malloc(opaque<size_t>(64));
  std::memset(g_target, 0x41, 64);
  free(r);
  free(p);
  *hide(p) = g_target;
  void* first = malloc(opaque<size_t>(64));
  void* second = malloc(opaque<size_t>(64));
  if (first == p && second == g_target) std::fputs("handed out the live block\n", stderr);
  std::_Exit(0);
}

// A death by our report or by SIGSEGV (the demangled link names no mapped memory) is fine; a
// normal exit means the forged address was handed out.
bool stopped_by_report_or_fault(int status) {
  return WIFSIGNALED(status) && (WTERMSIG(status) == SIGABRT || WTERMSIG(status) == SIGSEGV);
}

TEST_F(SafeLinkingDeathTest, APlainPointerWrittenOverALinkIsNeverHandedOut) {
  EXPECT_EXIT(run_in_a_new_thread(forge_plain_pointer), stopped_by_report_or_fault,
              "^(|poolalloc: the free list of size class 3 [^\n]*\n)$");
}

// An overflow of bytes, as strcpy past the end would write.
void forge_bytes() {
  void* r = malloc(opaque<size_t>(64));
  auto* p = static_cast<char*>(malloc(opaque<size_t>(64)));
  free(r);
  free(p);
  std::memset(hide(p), 'A', 16);
  void* first = malloc(opaque<size_t>(64));
  void* second = malloc(opaque<size_t>(64));
  if (first == p) std::fprintf(stderr, "handed out %p\n", second);
  std::_Exit(0);
}

TEST_F(SafeLinkingDeathTest, BytesWrittenOverALinkAreNeverFollowed) {
  EXPECT_EXIT(run_in_a_new_thread(forge_bytes), stopped_by_report_or_fault,
              "^(|poolalloc: the free list of size class 3 [^\n]*\n)$");
}

// The attacker knows where the blocks lie relative to each other but not the keys: flipping the
// bits by which the old and the new target differ turns a plainly stored link into the target.
// The mangled link decodes to the target too, but the target carries no free mark.
void forge_by_difference() {
  void* r = malloc(opaque<size_t>(64));
  auto* p = static_cast<uintptr_t*>(malloc(opaque<size_t>(64)));
  g_target = malloc(opaque<size_t>(64));
  std::memset(g_target, 0x41, 64);
  free(r);
  free(p);
  *hide(p) ^= reinterpret_cast<uintptr_t>(r) ^ reinterpret_cast<uintptr_t>(g_target);
  void* first = malloc(opaque<size_t>(64));
  void* second = malloc(opaque<size_t>(64));
  if (first == p && second == g_target) std::fputs("handed out the live block\n", stderr);
  std::_Exit(0);
}

TEST_F(SafeLinkingDeathTest, ALinkRedirectedToALiveBlockIsReported) {
  EXPECT_DEATH(run_in_a_new_thread(forge_by_difference), corrupted_list_of_64("0x[0-9a-f]+"));
}

// The same forgery found by the slow path: malloc_trim(0) gives the cache's list to the
// central lists and on to the spans, checking each block before following its link.
void forge_then_trim() {
  void* r = malloc(opaque<size_t>(64));
  auto* p = static_cast<uintptr_t*>(malloc(opaque<size_t>(64)));
  g_target = malloc(opaque<size_t>(64));
  std::memset(g_target, 0x41, 64);
  free(r);
  free(p);
  *hide(p) ^= reinterpret_cast<uintptr_t>(r) ^ reinterpret_cast<uintptr_t>(g_target);
  malloc_trim(0);
  for (int i = 0; i < 100000; ++i) {
    if (malloc(opaque<size_t>(64)) == g_target) std::fputs("handed out the live block\n", stderr);
  }
  std::_Exit(0);
}

TEST_F(SafeLinkingDeathTest, ALinkRedirectedToALiveBlockIsReportedByTheSlowPath) {
  EXPECT_DEATH(run_in_a_new_thread(forge_then_trim), corrupted_list_of_64("0x[0-9a-f]+"));
}

}  // namespace
}  // namespace malloc_test
