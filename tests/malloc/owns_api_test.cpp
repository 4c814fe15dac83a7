// poolalloc_owns and the other introspection exports, built twice: against libpoolalloc.so and
// against libpoolalloc-debug.so (tests/debug), which must answer alike. The debug heap hands out
// the bytes past a front guard, so an answer computed around its heap would be wrong there.
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

extern "C" {
void* __libc_malloc(size_t);  // glibc's own allocator
void __libc_free(void*);
}

namespace malloc_test {
namespace {

TEST(OwnsApi, APooledBlockIsOwned) {
  for (size_t size : {size_t{1}, size_t{16}, size_t{64}, size_t{1000}, size_t{20000}}) {
    void* p = malloc(opaque(size));
    EXPECT_EQ(poolalloc_owns(p), 1) << size;
    free(p);
  }
  auto* text = new std::string(200, 'x');
  EXPECT_EQ(poolalloc_owns(text), 1);
  EXPECT_EQ(poolalloc_owns(text->data()), 1);
  delete text;
  char* copy = strdup(opaque("through libc"));
  EXPECT_EQ(poolalloc_owns(copy), 1);
  free(copy);
}

TEST(OwnsApi, GlibcAndLargeBlocksAreNotOwned) {
  void* large = malloc(opaque<size_t>(1) << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(poolalloc_owns(large), 0);
  free(large);
  void* foreign = __libc_malloc(opaque<size_t>(64));
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(poolalloc_owns(foreign), 0);
  __libc_free(foreign);
}

TEST(OwnsApi, InteriorPointersAndNullAreNotOwned) {
  auto* block = static_cast<char*>(malloc(opaque<size_t>(64)));
  ASSERT_EQ(poolalloc_owns(block), 1);
  EXPECT_EQ(poolalloc_owns(hide(block + 16)), 0);
  EXPECT_EQ(poolalloc_owns(hide(block + 1)), 0);
  EXPECT_EQ(poolalloc_owns(nullptr), 0);
  free(block);
}

// usable_size, stats, mallinfo2 and trim answer through the same heap as owns.
TEST(OwnsApi, TheOtherReportsSeeTheSameBlocks) {
  poolalloc_stats before{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  void* p = malloc(opaque<size_t>(100));
  poolalloc_stats during{};
  ASSERT_EQ(poolalloc_get_stats(&during), 0);
  EXPECT_GE(malloc_usable_size(p), 100u);
  EXPECT_GT(during.pooled_live, before.pooled_live);
  EXPECT_GE(mallinfo2().arena, during.bytes_held);
  free(p);
  EXPECT_GE(malloc_trim(0), 0);
}

}  // namespace
}  // namespace malloc_test
