// libpoolalloc-debug.a linked into a Windows program (mingw-w64, run under wine), at the default
// options: the blocks of the C runtime's own malloc (strdup's) are taken by poolalloc_free,
// poolalloc_realloc, poolalloc_usable_size and delete, as the release build takes them, and a
// block the C runtime freed already is still reported. A report names its call sites'
// functions, from the program's COFF symbol table.
#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "c_runtime_blocks.hpp"
#include "opaque_pointer.hpp"

// Call sites with names of their own: neither inlined nor left by a tail call (a tail call's
// site is its caller's).
extern "C" [[gnu::noinline]] void* windows_site_malloc(std::size_t size) {
  void* p = poolalloc_malloc(size);
  asm volatile("" ::: "memory");
  return p;
}
extern "C" [[gnu::noinline]] void windows_site_free(void* p) {
  poolalloc_free(p);
  asm volatile("" ::: "memory");
}

namespace {

TEST(WindowsDebugHeap, ABlockOfTheCRuntimesMallocIsTakenAsTheReleaseBuildTakesIt) {
  expect_c_runtime_blocks_taken();
  ::operator delete(opaque(strdup("deleted")));
  ::operator delete (opaque(std::malloc(32)), std::size_t{32});
}

TEST(WindowsDebugHeapDeathTest, ABlockTheCRuntimeFreedAlreadyIsReported) {
  void* block = opaque(std::malloc(100));
  EXPECT_DEATH(
      {
        std::free(opaque(block));
        poolalloc_free(opaque(block));
      },
      "poolalloc-debug: invalid free of \\w+ at .*: not a block that malloc returned");
  std::free(block);
}

TEST(WindowsDebugHeapDeathTest, ADoubleFreeReportNamesTheFunctionsOfItsCallSites) {
  void* block = windows_site_malloc(24);
  windows_site_free(block);
  EXPECT_DEATH(windows_site_free(opaque(block)),
               "poolalloc-debug: double free: free of \\w+ \\(24 bytes in a \\w+-byte block of "
               "size class \\w+, allocated at windows_site_malloc\\+0x\\w+ "
               "\\(.*windows_debug_test\\.exe\\)\\) at windows_site_free\\+0x\\w+ "
               "\\(.*windows_debug_test\\.exe\\); first freed at windows_site_free\\+0x\\w+ ");
}

}  // namespace
