// Port of glibc's tst-malloc-too-large and mimalloc's malloc-nomem1: every allocation call,
// asked for a size no process can have (SIZE_MAX - i, or above PTRDIFF_MAX), fails with NULL
// and ENOMEM, including when an allocator adds padding, a header or alignment to the size and
// that sum overflows.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

constexpr size_t kSpread = (size_t{1} << 14) - 1;  // glibc's FOURTEEN_ON_BITS

testing::AssertionResult NullWithEnomem(const char* call, void* p, size_t size) {
  int saved = errno;
  if (p != nullptr) {
    free(p);
    return testing::AssertionFailure() << call << "(" << size << ") returned a pointer";
  }
  if (saved != ENOMEM) {
    return testing::AssertionFailure() << call << "(" << size << ") set errno " << saved;
  }
  return testing::AssertionSuccess();
}

// Each call is made with errno cleared first; the macro keeps the call's name for the message.
#define EXPECT_TOO_LARGE(call, size) ASSERT_TRUE(NullWithEnomem(#call, (errno = 0, call), size))

void check_too_large(size_t size) {
  const size_t page = page_size();
  EXPECT_TOO_LARGE(malloc(opaque(size)), size);
  EXPECT_TOO_LARGE(calloc(1, opaque(size)), size);
  EXPECT_TOO_LARGE(calloc(opaque(size), 1), size);
  EXPECT_TOO_LARGE(calloc(2, opaque(size / 2 + 1)), size);
  EXPECT_TOO_LARGE(calloc(opaque(size / 4 + 1), 4), size);
  EXPECT_TOO_LARGE(reallocarray(nullptr, 1, opaque(size)), size);
  EXPECT_TOO_LARGE(reallocarray(nullptr, opaque(size), 1), size);
  EXPECT_TOO_LARGE(valloc(opaque(size)), size);
  EXPECT_TOO_LARGE(pvalloc(opaque(size)), size);
  for (size_t alignment = 1; alignment <= page; alignment *= 2) {
    EXPECT_TOO_LARGE(memalign(opaque(alignment), opaque(size)), size);
    EXPECT_TOO_LARGE(aligned_alloc(opaque(alignment), opaque(size)), size);
    if (alignment >= sizeof(void*)) {
      void* untouched = &untouched;
      ASSERT_EQ(posix_memalign(&untouched, opaque(alignment), opaque(size)), ENOMEM) << size;
      ASSERT_EQ(untouched, &untouched) << size;
    }
  }
}

// realloc to an impossible size fails and the old block survives.
void check_realloc_too_large(void* block, size_t size) {
  EXPECT_TOO_LARGE(realloc(hide(block), opaque(size)), size);
  EXPECT_TOO_LARGE(reallocarray(hide(block), 1, opaque(size)), size);
  EXPECT_TOO_LARGE(reallocarray(hide(block), opaque(size), 1), size);
}

TEST(TooLarge, SizesJustBelowSizeMax) {
  for (size_t i = 0; i <= kSpread; ++i) ASSERT_NO_FATAL_FAILURE(check_too_large(SIZE_MAX - i));
}

TEST(TooLarge, SizesJustAbovePtrdiffMax) {
  for (size_t i = 0; i <= kSpread; ++i) {
    ASSERT_NO_FATAL_FAILURE(check_too_large(size_t{PTRDIFF_MAX} + 1 + i));
  }
}

TEST(TooLarge, SizesAcrossTheUpperHalf) {
  for (int shift = 63; shift >= 1; --shift) {
    ASSERT_NO_FATAL_FAILURE(check_too_large((size_t{1} << 63) | (SIZE_MAX >> shift)));
  }
}

TEST(TooLarge, ReallocKeepsTheBlock) {
  for (size_t n : {0u, 64u, 32768u, 1u << 20}) {
    void* block = malloc(opaque(n));
    ASSERT_NE(block, nullptr);
    fill(block, n, n);
    for (size_t i = 0; i <= kSpread; i += 97) {
      ASSERT_NO_FATAL_FAILURE(check_realloc_too_large(block, SIZE_MAX - i));
      ASSERT_NO_FATAL_FAILURE(check_realloc_too_large(block, size_t{PTRDIFF_MAX} + 1 + i));
    }
    EXPECT_TRUE(matches(block, n, n));
    free(block);
  }
}

}  // namespace
}  // namespace malloc_test
