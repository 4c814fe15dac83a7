// libpoolalloc.a linked into an executable (first on the link line) replaces malloc and the
// global operators new/delete: the executable's definitions interpose libc's and libstdc++'s.
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

TEST(StaticLink, NewObjectIsOwnedByThePools) {
  int* p = new int(42);
  EXPECT_NE(poolalloc_owns(p), 0);
  EXPECT_EQ(*p, 42);
  delete p;
}

TEST(StaticLink, ArrayAndAlignedNewAreOwnedByThePools) {
  auto* array = new double[10]();
  EXPECT_NE(poolalloc_owns(array), 0);
  delete[] array;
  struct alignas(256) Aligned {
    char bytes[256];
  };
  auto* aligned = new Aligned();
  EXPECT_TRUE(is_aligned(aligned, 256));
  EXPECT_NE(poolalloc_owns(aligned), 0);
  delete aligned;
}

TEST(StaticLink, LibraryContainersUseThePools) {
  std::vector<int> numbers(100, 7);
  EXPECT_NE(poolalloc_owns(numbers.data()), 0);
  auto shared = std::make_shared<std::string>(200, 'y');
  EXPECT_NE(poolalloc_owns(shared->data()), 0);
}

// malloc is exported from the executable, so libc's internal calls reach it too.
TEST(StaticLink, MallocAndLibcInternalAllocationsAreOwned) {
  void* p = malloc(opaque<size_t>(64));
  EXPECT_NE(poolalloc_owns(p), 0);
  free(p);
  char* copy = strdup(opaque("static"));
  EXPECT_NE(poolalloc_owns(copy), 0) << "libc's strdup did not reach the linked-in malloc";
  free(copy);
}

TEST(StaticLink, DeleteGivesBlocksBack) {
  poolalloc_stats before{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  for (int i = 0; i < 1000; ++i) {
    int* p = hide(new int(i));  // hide() keeps the compiler from eliding the new/delete pair
    delete p;
  }
  poolalloc_stats after{};
  ASSERT_EQ(poolalloc_get_stats(&after), 0);
  EXPECT_GE(after.pooled_requests - before.pooled_requests, 1000u);
  EXPECT_GE(after.pooled_frees - before.pooled_frees, 1000u);
}

}  // namespace
}  // namespace malloc_test
