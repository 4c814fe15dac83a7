// libpoolalloc-debug.a linked into a Windows program (mingw-w64, run under wine), at the default
// options: the blocks of the C runtime's own malloc (strdup's) are taken by poolalloc_free,
// poolalloc_realloc, poolalloc_usable_size and delete, as the release build takes them, and a
// block the C runtime freed already is still reported.
#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "opaque_pointer.hpp"

namespace {

TEST(WindowsDebugHeap, ABlockOfTheCRuntimesMallocIsTakenAsTheReleaseBuildTakesIt) {
  char* copy = strdup("a string the C runtime allocated");
  EXPECT_FALSE(poolalloc_owns(copy));
  EXPECT_GE(poolalloc_usable_size(copy), std::strlen(copy) + 1);
  poolalloc_free(copy);
  char* grown = static_cast<char*>(poolalloc_realloc(strdup("grow me"), 100000));
  ASSERT_NE(grown, nullptr);
  EXPECT_STREQ(grown, "grow me");
  poolalloc_free(grown);
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

}  // namespace
