// The C allocation API: malloc, free, calloc, realloc, reallocarray, malloc_usable_size and the
// introspection calls, with glibc 2.36's semantics. Ports the checks of glibc's tst-calloc,
// tst-realloc, tst-reallocarray, tst-free-errno and tst-malloc-usable, and mimalloc's test-api
// edge cases (malloc-zero, calloc-overflow, realloc-null, realloc-null-sizezero).
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

constexpr int kSentinelErrno = 1789;  // no errno code has this value

TEST(Malloc, ZeroSizeGivesDistinctFreeablePointers) {
  void* a = malloc(opaque<size_t>(0));
  void* b = malloc(opaque<size_t>(0));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_TRUE(is_aligned(a, 16));
  free(a);
  free(b);
}

// Every size from 1 to 4096 is 16-byte aligned (no 8-byte class), its usable size covers the
// request, and all of them live at once without overlapping: each is filled to its usable size
// with its own pattern and all patterns are checked afterwards.
TEST(Malloc, EverySizeUpTo4096IsAlignedAndDisjoint) {
  constexpr size_t kMax = 4096;
  std::vector<void*> blocks(kMax + 1);
  std::vector<size_t> usable(kMax + 1);
  for (size_t n = 1; n <= kMax; ++n) {
    blocks[n] = malloc(opaque(n));
    ASSERT_NE(blocks[n], nullptr) << n;
    ASSERT_TRUE(is_aligned(blocks[n], 16)) << n << " " << blocks[n];
    usable[n] = malloc_usable_size(blocks[n]);
    ASSERT_GE(usable[n], n);
    fill(blocks[n], usable[n], n);
  }
  for (size_t n = 1; n <= kMax; ++n) {
    ASSERT_TRUE(matches(blocks[n], usable[n], n)) << "block of " << n << " was overwritten";
    free(blocks[n]);
  }
}

TEST(Malloc, LargeSizesAreAlignedAndWritable) {
  for (size_t n :
       {4097u, 16384u, 32767u, 32768u, 32769u, 40000u, 65536u, 1u << 20, (1u << 22) + 1}) {
    auto* p = static_cast<unsigned char*>(malloc(opaque(n)));
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(is_aligned(p, 16)) << n;
    size_t usable = malloc_usable_size(p);
    EXPECT_GE(usable, n);
    p[0] = 1;
    p[usable - 1] = 2;
    EXPECT_EQ(p[0], 1);
    EXPECT_EQ(p[usable - 1], 2);
    free(p);
  }
}

TEST(Free, NullIsANoOpAndKeepsErrno) {
  errno = kSentinelErrno;
  free(opaque<void*>(nullptr));
  EXPECT_EQ(errno, kSentinelErrno);
}

// tst-free-errno: free must not change errno, whichever path it takes: a cached small block,
// the free that empties a span (which may give pages back with madvise), a system block, and a
// block large enough to be an mmap of its own (munmap).
TEST(Free, PreservesErrnoOnEveryPath) {
  for (size_t n : {1u, 64u, 1024u, 32768u, 32769u, 1u << 20, 64u << 20}) {
    void* p = malloc(opaque(n));
    ASSERT_NE(p, nullptr);
    static_cast<char*>(p)[0] = 1;
    errno = kSentinelErrno;
    free(p);
    EXPECT_EQ(errno, kSentinelErrno) << "free of a block of " << n;
  }
  // Many blocks of one class, freed in full: the last frees empty whole spans.
  std::vector<void*> blocks(4096);
  for (void*& p : blocks) {
    p = malloc(opaque<size_t>(1024));
    ASSERT_NE(p, nullptr);
    fill(p, 1024, 7);
  }
  for (void* p : blocks) {
    errno = kSentinelErrno;
    free(p);
    ASSERT_EQ(errno, kSentinelErrno);
  }
  // After a trim has given memory back, frees still keep errno.
  void* p = malloc(opaque<size_t>(100));
  malloc_trim(0);
  errno = ENOMEM;
  free(p);
  EXPECT_EQ(errno, ENOMEM);
}

// tst-calloc: the memory is zero, also when the block is recycled from dirty freed blocks.
TEST(Calloc, ReturnsZeroedMemoryEvenWhenRecycled) {
  for (size_t n : {1u, 15u, 16u, 100u, 1000u, 4096u, 32768u, 32769u, 100000u, 1u << 20}) {
    std::array<void*, 16> dirty{};
    for (void*& p : dirty) {
      p = malloc(opaque(n));
      ASSERT_NE(p, nullptr);
      memset(p, 0xFF, malloc_usable_size(p));
    }
    for (void* p : dirty) free(p);
    for (size_t i = 0; i < dirty.size(); ++i) {
      dirty[i] = calloc(opaque(n), 1);
      ASSERT_NE(dirty[i], nullptr);
      ASSERT_TRUE(all_bytes_are(dirty[i], n, 0)) << "calloc(" << n << ", 1) not zeroed";
    }
    for (void* p : dirty) free(p);
  }
}

// README promises that writing malloc_usable_size bytes is safe, and glibc's calloc zeroes the
// whole chunk: the slack past the request of a recycled block must be zero too.
TEST(Calloc, ZeroesTheWholeUsableSize) {
  for (size_t n : {1u, 20u, 100u, 1000u, 4000u}) {
    void* dirty = malloc(opaque(n));
    ASSERT_NE(dirty, nullptr);
    memset(dirty, 'S', malloc_usable_size(dirty));
    free(dirty);
    void* p = calloc(opaque<size_t>(1), opaque(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, dirty) << "the test needs the dirty block back";
    EXPECT_TRUE(all_bytes_are(p, malloc_usable_size(p), 0))
        << "calloc(1, " << n << ") leaves slack bytes of an old block";
    free(p);
  }
}

TEST(Calloc, ElementCountTimesSizeIsZeroed) {
  auto* p = static_cast<unsigned char*>(calloc(opaque<size_t>(1000), opaque<size_t>(33)));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(is_aligned(p, 16));
  EXPECT_GE(malloc_usable_size(p), 33000u);
  EXPECT_TRUE(all_bytes_are(p, 33000, 0));
  free(p);
}

TEST(Calloc, ZeroCountOrSizeGivesFreeablePointer) {
  void* a = calloc(opaque<size_t>(0), opaque<size_t>(0));
  void* b = calloc(opaque<size_t>(0), opaque<size_t>(16));
  void* c = calloc(opaque<size_t>(16), opaque<size_t>(0));
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(c, nullptr);
  free(a);
  free(b);
  free(c);
}

// mimalloc calloc-overflow, glibc tst-calloc: n * size overflows → NULL and ENOMEM.
TEST(Calloc, OverflowFailsWithEnomem) {
  const std::pair<size_t, size_t> cases[] = {
      {SIZE_MAX, 2},
      {2, SIZE_MAX},
      {SIZE_MAX / 2 + 1, 2},
      {size_t{1} << 32, size_t{1} << 32},
      {SIZE_MAX, SIZE_MAX},
      {SIZE_MAX / 1000 + 1, 1000},
      {(size_t{1} << 33) + 1, size_t{1} << 31},
  };
  for (auto [count, size] : cases) {
    errno = 0;
    void* p = calloc(opaque(count), opaque(size));
    EXPECT_EQ(p, nullptr) << count << " x " << size;
    EXPECT_EQ(errno, ENOMEM) << count << " x " << size;
    free(p);
  }
}

// mimalloc realloc-null and realloc-null-sizezero; glibc tst-realloc.
TEST(Realloc, NullPointerActsAsMalloc) {
  void* zero = realloc(opaque<void*>(nullptr), opaque<size_t>(0));
  ASSERT_NE(zero, nullptr);
  void* p = realloc(opaque<void*>(nullptr), opaque<size_t>(100));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(is_aligned(p, 16));
  EXPECT_GE(malloc_usable_size(p), 100u);
  fill(p, 100, 1);
  EXPECT_TRUE(matches(p, 100, 1));
  free(p);
  free(zero);
}

// glibc frees the block and returns NULL (REALLOC_ZERO_BYTES_FREES), without touching errno.
TEST(Realloc, ZeroSizeFreesAndReturnsNull) {
  for (size_t n : {1u, 100u, 32769u, 1u << 20}) {
    void* p = malloc(opaque(n));
    ASSERT_NE(p, nullptr);
    errno = kSentinelErrno;
    EXPECT_EQ(realloc(p, opaque<size_t>(0)), nullptr) << n;
    EXPECT_EQ(errno, kSentinelErrno) << n;
  }
}

// Grow and shrink through every kind of block (small pooled, the largest pooled, system
// blocks) and back: the first min(old, new) bytes survive each step.
TEST(Realloc, GrowAndShrinkKeepContents) {
  const size_t steps[] = {1,     17,    100,  4000, 32768, 32769, 100000,  1 << 20,
                          40000, 32768, 5000, 50,   1,     3000,  1 << 21, 7};
  size_t old_size = 24;
  void* p = malloc(old_size);
  ASSERT_NE(p, nullptr);
  fill(p, old_size, old_size);
  for (size_t n : steps) {
    void* q = realloc(p, opaque(n));
    ASSERT_NE(q, nullptr) << old_size << " -> " << n;
    EXPECT_TRUE(is_aligned(q, 16));
    EXPECT_GE(malloc_usable_size(q), n);
    size_t kept = std::min(old_size, n);
    ASSERT_EQ(first_mismatch(q, kept, old_size), kept) << old_size << " -> " << n;
    fill(q, n, n);
    p = q;
    old_size = n;
  }
  free(p);
}

// The copy covers min(old usable size, new size), not just the size asked for: programs write
// into the slack malloc_usable_size reports (systemd#12384).
TEST(Realloc, KeepsTheUsableSlack) {
  for (size_t n : {1u, 20u, 100u, 1000u, 30000u, 32768u, 40000u, 100000u}) {
    void* p = malloc(opaque(n));
    ASSERT_NE(p, nullptr);
    size_t usable = malloc_usable_size(p);
    fill(p, usable, n);
    void* q = realloc(p, opaque(usable + 1000));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(first_mismatch(q, usable, n), usable) << "realloc of " << n << " lost the slack";
    free(q);
  }
}

// A failed realloc returns NULL with ENOMEM and leaves the old block as it was.
TEST(Realloc, FailureLeavesBlockIntact) {
  for (size_t n : {0u, 100u, 32768u, 1u << 20}) {
    void* p = malloc(opaque(n));
    ASSERT_NE(p, nullptr);
    fill(p, n, 99);
    for (size_t huge : {SIZE_MAX, SIZE_MAX - 4096, size_t{PTRDIFF_MAX} + 1}) {
      errno = 0;
      EXPECT_EQ(realloc(hide(p), opaque(huge)), nullptr) << n << " -> " << huge;
      EXPECT_EQ(errno, ENOMEM);
      ASSERT_TRUE(matches(p, n, 99)) << "failed realloc changed a block of " << n;
    }
    free(p);
  }
}

// tst-reallocarray.
TEST(Reallocarray, OverflowFailsWithEnomemAndKeepsBlock) {
  void* p = malloc(opaque<size_t>(64));
  ASSERT_NE(p, nullptr);
  fill(p, 64, 5);
  const size_t half = size_t{1} << (sizeof(size_t) * 4);
  const std::pair<size_t, size_t> cases[] = {{half, half}, {SIZE_MAX, 2}, {2, SIZE_MAX / 2 + 1}};
  for (auto [count, size] : cases) {
    errno = 0;
    EXPECT_EQ(reallocarray(hide(p), opaque(count), opaque(size)), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(reallocarray(nullptr, opaque(count), opaque(size)), nullptr);
    EXPECT_EQ(errno, ENOMEM);
  }
  EXPECT_TRUE(matches(p, 64, 5));
  free(p);
}

TEST(Reallocarray, GrowsLikeReallocWithoutOverflow) {
  auto* p = static_cast<int*>(reallocarray(nullptr, opaque<size_t>(10), sizeof(int)));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 10; ++i) p[i] = i;
  // Largest count that does not overflow for this element size, then a plain growth.
  p = static_cast<int*>(reallocarray(p, opaque<size_t>(20000), sizeof(int)));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p[i], i);
  EXPECT_GE(malloc_usable_size(p), 20000 * sizeof(int));
  // A zero count is realloc(p, 0): the block is freed and NULL comes back.
  EXPECT_EQ(reallocarray(p, opaque<size_t>(0), sizeof(int)), nullptr);
}

TEST(MallocUsableSize, NullIsZero) {
  EXPECT_EQ(malloc_usable_size(opaque<void*>(nullptr)), 0u);
}

// tst-malloc-usable (without MALLOC_CHECK_): at least the request, the same value every time
// it is asked while the block lives, and every usable byte can be written without touching
// the next block.
TEST(MallocUsableSize, CoversRequestAndIsStable) {
  for (size_t n = 1; n <= 40000; n = n * 3 / 2 + 1) {
    void* a = malloc(opaque(n));
    void* b = malloc(opaque(n));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    size_t usable_a = malloc_usable_size(a);
    size_t usable_b = malloc_usable_size(b);
    ASSERT_GE(usable_a, n);
    fill(b, usable_b, 2 * n + 1);
    memset(a, 0x5A, usable_a);
    EXPECT_EQ(malloc_usable_size(a), usable_a) << n;
    EXPECT_TRUE(matches(b, usable_b, 2 * n + 1)) << "writing usable bytes of " << n;
    free(a);
    free(b);
  }
}

// glibc semantics: 1 if memory was released, else 0. Whatever it releases, live blocks stay.
TEST(MallocTrim, ReturnsZeroOrOneAndKeepsLiveBlocks) {
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) blocks.push_back(malloc(opaque<size_t>(64 + i % 1000)));
  void* keep = malloc(opaque<size_t>(200));
  ASSERT_NE(keep, nullptr);
  fill(keep, 200, 3);
  for (void* p : blocks) free(p);
  for (size_t pad : {size_t{0}, size_t{1} << 20}) {
    int released = malloc_trim(pad);
    EXPECT_TRUE(released == 0 || released == 1) << released;
  }
  EXPECT_TRUE(matches(keep, 200, 3));
  free(keep);
}

TEST(MallocStats, PrintsToStderr) {
  void* p = malloc(opaque<size_t>(64));
  testing::internal::CaptureStderr();
  malloc_stats();
  std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(printed.empty());
  free(p);
}

TEST(Mallinfo2, ReportsLiveAllocations) {
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    blocks.push_back(malloc(opaque<size_t>(1000)));
    fill(blocks.back(), 1000, 1);
  }
  struct mallinfo2 info = mallinfo2();
  EXPECT_GT(info.arena, 0u);
  EXPECT_GT(info.uordblks, 0u);
  for (void* p : blocks) free(p);
}

}  // namespace
}  // namespace malloc_test
