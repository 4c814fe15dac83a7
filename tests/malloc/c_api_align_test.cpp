// The aligned C allocation calls with glibc 2.36's semantics: memalign, aligned_alloc (an alias
// of memalign on 2.36), posix_memalign, valloc and pvalloc. Ports the checks of glibc's
// tst-memalign, tst-posix_memalign, tst-valloc and tst-pvalloc, and mimalloc's test-api cases
// posix_memalign_{no_align,nopow2,nomem,zero}.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"

namespace malloc_test {
namespace {

constexpr size_t kGiB = size_t{1} << 30;
void* const kUntouched = reinterpret_cast<void*>(uintptr_t{0xdeadbeef0});

using AlignedAllocFn = void* (*)(size_t alignment, size_t size);

void* via_posix_memalign(size_t alignment, size_t size) {
  void* p = nullptr;
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

struct NamedAlignedAlloc {
  const char* name;
  AlignedAllocFn fn;
};
const NamedAlignedAlloc kAlignedAllocs[] = {
    {"memalign", [](size_t a, size_t n) { return memalign(a, n); }},
    {"aligned_alloc", [](size_t a, size_t n) { return aligned_alloc(a, n); }},
    {"posix_memalign", via_posix_memalign},
};

// Every power-of-two alignment from 16 to 1 GiB, with small sizes (the large alignments cost
// address space only) and, for alignments a pool can serve, sizes up to the largest class.
TEST(AlignedAllocation, EveryPowerOfTwoUpTo1GiB) {
  for (const NamedAlignedAlloc& f : kAlignedAllocs) {
    for (size_t alignment = 16; alignment <= kGiB; alignment *= 2) {
      std::vector<size_t> sizes = {1, 16, 100};
      if (alignment <= 4096) sizes.insert(sizes.end(), {alignment, 5000, 32768, 40000});
      for (size_t n : sizes) {
        auto* p = static_cast<unsigned char*>(f.fn(opaque(alignment), opaque(n)));
        ASSERT_NE(p, nullptr) << f.name << "(" << alignment << ", " << n << ")";
        EXPECT_TRUE(is_aligned(p, alignment)) << f.name << "(" << alignment << ", " << n << ")";
        size_t usable = malloc_usable_size(p);
        EXPECT_GE(usable, n);
        p[0] = 1;
        p[n - 1] = 2;
        free(p);
      }
    }
  }
}

// Aligned blocks that live at the same time do not overlap.
TEST(AlignedAllocation, LiveBlocksAreDisjoint) {
  for (size_t alignment : {32u, 64u, 256u, 4096u, 8192u}) {
    std::vector<void*> blocks(64);
    for (size_t i = 0; i < blocks.size(); ++i) {
      blocks[i] = aligned_alloc(opaque(alignment), opaque<size_t>(200));
      ASSERT_NE(blocks[i], nullptr);
      ASSERT_TRUE(is_aligned(blocks[i], alignment));
      fill(blocks[i], 200, alignment + i);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_TRUE(matches(blocks[i], 200, alignment + i)) << alignment << " #" << i;
      free(blocks[i]);
    }
  }
}

// tst-memalign.
TEST(Memalign, HugeSizeFailsWithEnomem) {
  const size_t page = page_size();
  const std::pair<size_t, size_t> cases[] = {{sizeof(void*), SIZE_MAX},
                                             {page, 0 - page},
                                             {0x100, SIZE_MAX},
                                             {64, size_t{PTRDIFF_MAX} + 1}};
  for (auto [alignment, size] : cases) {
    errno = 0;
    EXPECT_EQ(memalign(opaque(alignment), opaque(size)), nullptr) << alignment << " " << size;
    EXPECT_EQ(errno, ENOMEM) << alignment << " " << size;
  }
}

// An alignment above SIZE_MAX / 2 + 1 cannot be rounded to a power of two (BZ #16038).
TEST(Memalign, AlignmentAboveHalfTheAddressSpaceIsEinval) {
  for (size_t alignment : {SIZE_MAX, SIZE_MAX / 2 + 2}) {
    errno = 0;
    EXPECT_EQ(memalign(opaque(alignment), page_size()), nullptr) << alignment;
    EXPECT_EQ(errno, EINVAL) << alignment;
    errno = 0;
    EXPECT_EQ(aligned_alloc(opaque(alignment), page_size()), nullptr) << alignment;
    EXPECT_EQ(errno, EINVAL) << alignment;
  }
}

TEST(Memalign, ZeroSizeGivesFreeablePointer) {
  void* p = memalign(opaque(sizeof(void*)), opaque<size_t>(0));
  EXPECT_NE(p, nullptr);
  free(p);
  p = memalign(opaque<size_t>(0x100), opaque<size_t>(0));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(is_aligned(p, 0x100));
  free(p);
}

// An alignment of 16 or less is plain malloc: still 16-byte aligned.
TEST(Memalign, SmallAlignmentIsLikeMalloc) {
  for (size_t alignment : {0u, 1u, 2u, 3u, 4u, 8u, 12u, 16u}) {
    void* p = memalign(opaque(alignment), opaque<size_t>(10));
    ASSERT_NE(p, nullptr) << alignment;
    EXPECT_TRUE(is_aligned(p, 16)) << alignment;
    free(p);
  }
}

// glibc 2.36 rounds an alignment that is not a power of two up to the next power of two, for
// memalign and for aligned_alloc (its alias on 2.36, which does not yet return EINVAL).
TEST(Memalign, NonPowerOfTwoAlignmentIsRoundedUp) {
  const std::pair<size_t, size_t> cases[] = {{24, 32},     {48, 64},     {80, 128},     {100, 128},
                                             {3000, 4096}, {5000, 8192}, {12288, 16384}};
  for (auto [asked, expected] : cases) {
    void* p = memalign(opaque(asked), opaque<size_t>(10));
    ASSERT_NE(p, nullptr) << asked;
    EXPECT_TRUE(is_aligned(p, expected)) << "memalign(" << asked << ") gave " << p;
    free(p);
    p = aligned_alloc(opaque(asked), opaque<size_t>(10));
    ASSERT_NE(p, nullptr) << asked;
    EXPECT_TRUE(is_aligned(p, expected)) << "aligned_alloc(" << asked << ") gave " << p;
    free(p);
  }
}

// glibc 2.36 (and mimalloc) accept a size that is not a multiple of the alignment.
TEST(AlignedAlloc, SizeNeedNotBeAMultipleOfTheAlignment) {
  for (auto [alignment, size] : {std::pair<size_t, size_t>{64, 10}, {4096, 1}, {256, 1000}}) {
    auto* p = static_cast<char*>(aligned_alloc(opaque(alignment), opaque(size)));
    ASSERT_NE(p, nullptr) << alignment << " " << size;
    EXPECT_TRUE(is_aligned(p, alignment));
    p[size - 1] = 1;
    free(p);
  }
}

// posix_memalign: EINVAL unless the alignment is a power of two multiple of sizeof(void*);
// the code is returned, errno is left alone and *memptr is not written.
TEST(PosixMemalign, BadAlignmentIsEinvalAndWritesNothing) {
  for (size_t alignment :
       {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{12}, sizeof(void*) * 3,
        size_t{0x108}, size_t{48}, SIZE_MAX, SIZE_MAX / 2 + 2}) {
    void* p = kUntouched;
    errno = 0;
    EXPECT_EQ(posix_memalign(&p, opaque(alignment), opaque<size_t>(32)), EINVAL) << alignment;
    EXPECT_EQ(p, kUntouched) << alignment;
    EXPECT_EQ(errno, 0) << alignment;
  }
}

// posix_memalign_nomem: ENOMEM and *memptr untouched.
TEST(PosixMemalign, HugeSizeIsEnomemAndWritesNothing) {
  const size_t page = page_size();
  const std::pair<size_t, size_t> cases[] = {{sizeof(void*), SIZE_MAX},
                                             {sizeof(void*), 0 - page},
                                             {64, size_t{PTRDIFF_MAX} + 1},
                                             {SIZE_MAX / 2 + 1, 1}};
  for (auto [alignment, size] : cases) {
    void* p = kUntouched;
    EXPECT_EQ(posix_memalign(&p, opaque(alignment), opaque(size)), ENOMEM)
        << alignment << " " << size;
    EXPECT_EQ(p, kUntouched) << alignment << " " << size;
  }
}

// glibc 2.36 leaves errno at ENOMEM when posix_memalign fails for want of memory (its own tests
// rely on it), and leaves errno alone when it succeeds.
TEST(PosixMemalign, FailureLeavesErrnoEnomem) {
  for (size_t alignment : {sizeof(void*), size_t{64}, size_t{4096}}) {
    void* p = kUntouched;
    errno = 0;
    const int result = posix_memalign(&p, opaque(alignment), opaque<size_t>(SIZE_MAX / 2));
    const int error = errno;
    EXPECT_EQ(result, ENOMEM) << alignment;
    EXPECT_EQ(error, ENOMEM) << alignment;
  }
}

TEST(PosixMemalign, SuccessLeavesErrnoAlone) {
  for (size_t alignment : {sizeof(void*), size_t{64}, size_t{4096}, size_t{1} << 20}) {
    void* p = kUntouched;
    errno = 12345;
    const int result = posix_memalign(&p, opaque(alignment), opaque<size_t>(100));
    const int error = errno;
    EXPECT_EQ(result, 0) << alignment;
    EXPECT_EQ(error, 12345) << alignment;
    free(p);
  }
}

TEST(PosixMemalign, SucceedsWithAlignedPointer) {
  for (size_t alignment : {sizeof(void*), size_t{16}, size_t{0x100}, size_t{4096}}) {
    void* p = kUntouched;
    ASSERT_EQ(posix_memalign(&p, opaque(alignment), opaque<size_t>(10)), 0) << alignment;
    EXPECT_TRUE(is_aligned(p, alignment > 16 ? alignment : 16)) << alignment;
    free(p);
  }
}

TEST(PosixMemalign, ZeroSizeGivesDistinctPointers) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(posix_memalign(&a, opaque(sizeof(void*)), opaque<size_t>(0)), 0);
  ASSERT_EQ(posix_memalign(&b, opaque(sizeof(void*)), opaque<size_t>(0)), 0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(a, b);
  free(a);
  free(b);
}

// tst-valloc.
TEST(Valloc, PageAlignedAndHugeFailsWithEnomem) {
  const size_t page = page_size();
  for (size_t n : {size_t{0}, size_t{1}, size_t{32}, page, page + 1, size_t{40000}}) {
    auto* p = static_cast<char*>(valloc(opaque(n)));
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(is_aligned(p, page)) << n;
    EXPECT_GE(malloc_usable_size(p), n);
    if (n > 0) p[n - 1] = 1;
    free(p);
  }
  for (size_t n : {SIZE_MAX, 0 - page}) {
    errno = 0;
    EXPECT_EQ(valloc(opaque(n)), nullptr) << n;
    EXPECT_EQ(errno, ENOMEM) << n;
  }
}

// tst-pvalloc: page aligned, and the size rounded up to whole pages, all of them writable.
TEST(Pvalloc, PageAlignedAndRoundedUpToPages) {
  const size_t page = page_size();
  for (size_t n : {size_t{1}, size_t{32}, page, page + 1, 3 * page - 7, size_t{40000}}) {
    auto* p = static_cast<char*>(pvalloc(opaque(n)));
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(is_aligned(p, page)) << n;
    size_t rounded = (n + page - 1) / page * page;
    ASSERT_GE(malloc_usable_size(p), rounded) << n;
    memset(p, 0x11, rounded);
    free(p);
  }
  void* zero = pvalloc(opaque<size_t>(0));
  ASSERT_NE(zero, nullptr);
  EXPECT_TRUE(is_aligned(zero, page));
  free(zero);
}

TEST(Pvalloc, HugeOrOverflowingRoundingFailsWithEnomem) {
  const size_t page = page_size();
  for (size_t n : {SIZE_MAX, SIZE_MAX - page + 2, 0 - page, size_t{PTRDIFF_MAX} + 1}) {
    errno = 0;
    EXPECT_EQ(pvalloc(opaque(n)), nullptr) << n;
    EXPECT_EQ(errno, ENOMEM) << n;
  }
}

}  // namespace
}  // namespace malloc_test
