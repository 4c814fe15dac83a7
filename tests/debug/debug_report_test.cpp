// Death tests of libpoolalloc-debug's reports: each test makes one mistake in a child process
// and checks the one-line report it dies with, which names the address, the size class (or
// that the block came from the system allocator), what was wrong and the call sites. The
// executable links libpoolalloc-debug.so, so its malloc, free, new and delete are the debug
// heap's, as under LD_PRELOAD.
#include <malloc.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "debug_sites.hpp"
#include "malloc_test_util.hpp"

namespace {

using malloc_test::hide;
using malloc_test::opaque;

// The address as the library prints it (lower-case hex).
std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx",
                static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(p)));
  return text;
}

// "function+0xNN (module)", as the library names a call site in this executable.
std::string site(const char* function) {
  return std::string(function) + "\\+0x[0-9a-f]+ \\([^()]*debug_report_test\\)";
}

// How the library describes a live or freed block of `size` bytes from the pools.
std::string pooled_block(const std::string& address, std::size_t size, const char* allocated_at) {
  return address + " \\(" + std::to_string(size) +
         " bytes in a [0-9]+-byte block of size class [0-9]+, allocated at " + site(allocated_at) +
         "\\)";
}

constexpr std::size_t kSize = 24;
constexpr const char* kHexAddress = "0x[0-9a-f]+";

// "fast" forks: the child makes the mistake on the very address the regex names. The tests
// that need an option in the child's environment use "threadsafe", which re-executes the
// test binary so that the library reads its options again.
class DebugReportDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

// A realloc or malloc_usable_size of a block in the quarantine uses a freed block: it is not
// named a double free.
TEST_F(DebugReportDeathTest, ReallocOfAFreedBlockIsAUseAfterFree) {
  void* p = debug_site_malloc(opaque(kSize));
  debug_site_free(p);
  EXPECT_DEATH(free(realloc(hide(p), 64)), "^poolalloc-debug: use after free: realloc of " +
                                               pooled_block(hex(p), kSize, "debug_site_malloc") +
                                               " at .*; freed at " + site("debug_site_free"));
}

TEST_F(DebugReportDeathTest, DoubleFree) {
  void* p = debug_site_malloc(opaque(kSize));
  debug_site_free(p);
  EXPECT_DEATH(debug_site_second_free(hide(p)),
               "^poolalloc-debug: double free: free of " +
                   pooled_block(hex(p), kSize, "debug_site_malloc") + " at " +
                   site("debug_site_second_free") + "; first freed at " + site("debug_site_free") +
                   "\n");
}

TEST_F(DebugReportDeathTest, DoubleFreeOfABlockFromTheSystemAllocator) {
  // Over 32 KiB: forwarded to the system allocator, yet still recorded and quarantined.
  const std::size_t size = opaque<std::size_t>(40000);
  void* p = debug_site_malloc(size);
  debug_site_free(p);
  EXPECT_DEATH(debug_site_second_free(hide(p)),
               "^poolalloc-debug: double free: free of " + hex(p) +
                   " \\(40000 bytes from the system allocator, allocated at " +
                   site("debug_site_malloc") + "\\) at " + site("debug_site_second_free") +
                   "; first freed at " + site("debug_site_free") + "\n");
}

// A block larger than the whole (default, 16 MiB) quarantine leaves it at once, and leaves the
// blocks that wait there where they are: a second free of one is still a double free.
TEST_F(DebugReportDeathTest, ABlockLargerThanTheQuarantinePushesNoOtherOut) {
  void* p = debug_site_malloc(opaque(kSize));
  debug_site_free(p);
  std::free(debug_site_malloc(opaque<std::size_t>(24 << 20)));
  EXPECT_DEATH(debug_site_second_free(hide(p)),
               "^poolalloc-debug: double free: free of " +
                   pooled_block(hex(p), kSize, "debug_site_malloc") + " at " +
                   site("debug_site_second_free") + "; first freed at " + site("debug_site_free") +
                   "\n");
}

TEST_F(DebugReportDeathTest, FreeOfAStackAddress) {
  int on_the_stack = 0;
  int* p = hide(&on_the_stack);
  EXPECT_DEATH(debug_site_free(p), "^poolalloc-debug: invalid free of " + hex(p) + " at " +
                                       site("debug_site_free") +
                                       ": not a block that malloc returned \\(another "
                                       "allocator's memory, or a block freed long ago\\)\n");
}

TEST_F(DebugReportDeathTest, FreeOfAPooledAddressMallocNeverReturned) {
  // The start of the pooled block under a debug block: its front guard, never handed out.
  auto* p = static_cast<char*>(debug_site_malloc(opaque(kSize)));
  char* guard = hide(p - 16);
  EXPECT_DEATH(
      debug_site_free(guard),
      "^poolalloc-debug: invalid free of " + hex(guard) + " at " + site("debug_site_free") +
          ": not a block that malloc returned \\(inside a block of size class [0-9]+\\)\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, FreeOfAnInteriorPointer) {
  auto* p = static_cast<char*>(debug_site_malloc(opaque(kSize)));
  char* interior = hide(p + 8);
  EXPECT_DEATH(debug_site_free(interior),
               "^poolalloc-debug: invalid free of " + hex(interior) + " at " +
                   site("debug_site_free") + ": an interior pointer, 8 bytes into " +
                   pooled_block(hex(p), kSize, "debug_site_malloc") + "\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, ReallocOfAnInteriorPointer) {
  auto* p = static_cast<char*>(debug_site_malloc(opaque(kSize)));
  char* interior = hide(p + 4);
  EXPECT_DEATH(debug_site_realloc(interior, 100),
               "^poolalloc-debug: invalid realloc of " + hex(interior) + " at " +
                   site("debug_site_realloc") + ": an interior pointer, 4 bytes into " +
                   pooled_block(hex(p), kSize, "debug_site_malloc") + "\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, OverflowFoundOnFree) {
  auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
  // Bytes 0 and 2 past the end: the report counts up to the furthest one, 3.
  EXPECT_DEATH(
      {
        p[kSize] = 1;
        p[kSize + 2] = 1;
        debug_site_free(p);
      },
      "^poolalloc-debug: buffer overflow found when the block was freed: 3 bytes past the end "
      "of " +
          pooled_block(hex(p), kSize, "debug_site_malloc") + " were overwritten\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, OverflowFoundByRealloc) {
  auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
  EXPECT_DEATH(
      {
        p[kSize] = 0;  // even a zero: the guard bytes are 0xfd
        debug_site_realloc(p, 1000);
      },
      "^poolalloc-debug: buffer overflow found by realloc: 1 bytes past the end of " +
          pooled_block(hex(p), kSize, "debug_site_malloc") + " were overwritten\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, OverflowFoundAtExit) {
  // The child overflows a block it never frees and exits normally: the check at exit finds it.
  EXPECT_DEATH(
      {
        auto* leaked = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
        leaked[kSize + 15] = 'x';  // the last guard byte
        std::exit(0);
      },
      "^poolalloc-debug: buffer overflow found at exit: 16 bytes past the end of " +
          pooled_block(kHexAddress, kSize, "debug_site_malloc") + " were overwritten\n");
}

TEST_F(DebugReportDeathTest, OverflowOfABlockFromTheSystemAllocator) {
  const std::size_t size = opaque<std::size_t>(50000);
  auto* p = hide(static_cast<char*>(debug_site_malloc(size)));
  EXPECT_DEATH(
      {
        p[size + 4] = 0;
        debug_site_free(p);
      },
      "^poolalloc-debug: buffer overflow found when the block was freed: 5 bytes past the end "
      "of " +
          hex(p) + " \\(50000 bytes from the system allocator, allocated at " +
          site("debug_site_malloc") + "\\) were overwritten\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, UnderflowBeforeTheStart) {
  auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
  EXPECT_DEATH(
      {
        p[-3] = 0;
        debug_site_free(p);
      },
      "^poolalloc-debug: buffer overflow found when the block was freed: 3 bytes before the "
      "start of " +
          pooled_block(hex(p), kSize, "debug_site_malloc") + " were overwritten\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, OverflowAtBothEnds) {
  auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
  EXPECT_DEATH(
      {
        p[-1] = 0;
        p[kSize] = 0;
        debug_site_free(p);
      },
      "^poolalloc-debug: buffer overflow found when the block was freed: 1 bytes past the end "
      "and 1 bytes before the start of " +
          pooled_block(hex(p), kSize, "debug_site_malloc") + " were overwritten\n");
  debug_site_free(p);
}

TEST_F(DebugReportDeathTest, SizedDeleteWithTheWrongSize) {
  void* p = debug_site_new(opaque(kSize));
  EXPECT_DEATH(debug_site_sized_delete(hide(p), opaque<std::size_t>(32)),
               "^poolalloc-debug: sized delete with the wrong size: 32 bytes given at " +
                   site("debug_site_sized_delete") + " for " +
                   pooled_block(hex(p), kSize, "debug_site_new") + "\n");
  debug_site_sized_delete(p, kSize);  // the right size: no report
}

// A write into a freed block is found when the block leaves the quarantine. The child is a
// fresh execution of this test with POOLALLOC_QUARANTINE=4K in its environment, so that
// freeing two blocks of 2 KiB more pushes the block out (one larger than the quarantine would
// leave it at once, pushing nothing).
class WriteAfterFreeDeathTest : public testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ASSERT_EQ(setenv("POOLALLOC_QUARANTINE", "4K", 1), 0);
  }
  void TearDown() override { unsetenv("POOLALLOC_QUARANTINE"); }
};

TEST_F(WriteAfterFreeDeathTest, FoundWhenTheBlockLeavesTheQuarantine) {
  EXPECT_DEATH(
      {
        auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
        debug_site_free(p);
        p[5] = 1;
        for (int i = 0; i < 2; ++i)
          debug_site_second_free(debug_site_malloc(opaque<std::size_t>(2048)));
      },
      "^poolalloc-debug: write after free found when the block left the quarantine: byte 5 "
      "of " +
          pooled_block(kHexAddress, kSize, "debug_site_malloc") +
          " was changed after it was freed at " + site("debug_site_free") + "\n");
}

TEST_F(DebugReportDeathTest, WriteAfterFreeFoundAtExit) {
  // Still in the (default, 16 MiB) quarantine when the process exits.
  EXPECT_DEATH(
      {
        auto* p = hide(static_cast<char*>(debug_site_malloc(opaque(kSize))));
        debug_site_free(p);
        p[kSize - 1] = 0;
        std::exit(0);
      },
      "^poolalloc-debug: write after free found at exit: byte 23 of " +
          pooled_block(kHexAddress, kSize, "debug_site_malloc") +
          " was changed after it was freed at " + site("debug_site_free") + "\n");
}

}  // namespace
