// Who owns a block: small requests are served by the pools, large or over-aligned ones by
// glibc; frees and reallocs route by address, also across the two; a bad free of a pointer
// inside the pool region is reported and aborts; the statistics move with the allocations.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

extern "C" {
void* __libc_malloc(size_t);  // glibc's own allocator, exported by libc.so.6 (GLIBC_2.2.5)
}

namespace malloc_test {
namespace {

constexpr size_t kMaxPooled = 32768;  // POOLALLOC_MAX_POOLED's default

int g_static_object;

TEST(Owns, SmallBlocksComeFromThePools) {
  for (size_t n = 1; n <= kMaxPooled; n += 61) {
    void* p = malloc(opaque(n));
    ASSERT_NE(poolalloc_owns(p), 0) << "malloc(" << n << ")";
    size_t usable = malloc_usable_size(p);
    EXPECT_GE(usable, n);
    EXPECT_EQ(usable % 16, 0u) << "classes are multiples of 16";
    free(p);
  }
  void* largest = malloc(opaque(kMaxPooled));
  EXPECT_NE(poolalloc_owns(largest), 0);
  free(largest);
}

TEST(Owns, EveryAllocationCallServesSmallBlocksFromThePools) {
  void* p = calloc(opaque<size_t>(10), opaque<size_t>(10));
  EXPECT_NE(poolalloc_owns(p), 0) << "calloc";
  p = realloc(p, opaque<size_t>(200));
  EXPECT_NE(poolalloc_owns(p), 0) << "realloc";
  free(p);
  p = realloc(nullptr, opaque<size_t>(64));
  EXPECT_NE(poolalloc_owns(p), 0) << "realloc(NULL)";
  free(p);
  for (size_t alignment : {32u, 64u, 256u, 4096u}) {
    p = memalign(opaque(alignment), opaque<size_t>(100));
    EXPECT_NE(poolalloc_owns(p), 0) << "memalign " << alignment;
    free(p);
    p = aligned_alloc(opaque(alignment), opaque<size_t>(100));
    EXPECT_NE(poolalloc_owns(p), 0) << "aligned_alloc " << alignment;
    free(p);
    p = nullptr;
    ASSERT_EQ(posix_memalign(&p, opaque(alignment), opaque<size_t>(100)), 0);
    EXPECT_NE(poolalloc_owns(p), 0) << "posix_memalign " << alignment;
    free(p);
  }
  p = valloc(opaque<size_t>(100));
  EXPECT_NE(poolalloc_owns(p), 0) << "valloc";
  free(p);
}

TEST(Owns, LargeAndOverAlignedBlocksGoToTheSystem) {
  for (size_t n : {kMaxPooled + 1, size_t{40000}, size_t{1} << 20}) {
    void* p = malloc(opaque(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(poolalloc_owns(p), 0) << "malloc(" << n << ")";
    free(p);
  }
  // No pooled class can be aligned beyond the largest class: those go to the system. (Smaller
  // alignments may be served by either; the pools serve them when a class is a multiple.)
  for (size_t alignment : {2 * kMaxPooled, size_t{1} << 20}) {
    void* p = memalign(opaque(alignment), opaque<size_t>(100));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(is_aligned(p, alignment));
    EXPECT_EQ(poolalloc_owns(p), 0) << "memalign " << alignment;
    free(p);
  }
}

TEST(Owns, AddressesThatWereNeverAllocated) {
  int on_stack = 0;
  EXPECT_EQ(poolalloc_owns(nullptr), 0);
  EXPECT_EQ(poolalloc_owns(&on_stack), 0);
  EXPECT_EQ(poolalloc_owns(&g_static_object), 0);
  EXPECT_EQ(poolalloc_owns(reinterpret_cast<const void*>(&poolalloc_owns)), 0);
}

// glibc calls the interposed malloc internally (strdup, std::string through operator new).
TEST(Owns, LibcAndLibstdcxxAllocateFromThePools) {
  char* copy = strdup(opaque("interposed"));
  EXPECT_NE(poolalloc_owns(copy), 0) << "strdup did not use our malloc";
  free(copy);
  auto* text = new std::string(100, 'x');
  EXPECT_NE(poolalloc_owns(text), 0);
  EXPECT_NE(poolalloc_owns(text->data()), 0);
  delete text;
}

// A pointer that glibc allocated behind our back is not ours: free, realloc and
// malloc_usable_size hand it to glibc.
TEST(Owns, ForeignGlibcBlocksAreRoutedToGlibc) {
  auto* p = static_cast<char*>(__libc_malloc(opaque<size_t>(100)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(poolalloc_owns(p), 0);
  EXPECT_GE(malloc_usable_size(p), 100u);
  fill(p, 100, 4);
  auto* q = static_cast<char*>(realloc(p, opaque<size_t>(64)));
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(matches(q, 64, 4));
  free(q);
  free(__libc_malloc(opaque<size_t>(1000)));
}

// realloc between a pooled and a system block, both directions: the first
// min(old usable size, new size) bytes survive. A block too large for the pools must leave
// them; a system block shrunk to a small size may stay with the system (glibc's realloc).
TEST(Realloc, PooledToSystemAndBack) {
  void* p = malloc(opaque<size_t>(100));
  ASSERT_NE(poolalloc_owns(p), 0);
  size_t usable = malloc_usable_size(p);
  fill(p, usable, 1);
  void* q = realloc(p, opaque<size_t>(1) << 20);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(poolalloc_owns(q), 0);
  EXPECT_EQ(first_mismatch(q, usable, 1), usable);
  fill(q, size_t{1} << 20, 2);
  void* r = realloc(q, opaque<size_t>(64));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(matches(r, 64, 2));
  EXPECT_GE(malloc_usable_size(r), 64u);
  free(r);
}

TEST(Realloc, LargestClassToSystemAndBack) {
  void* p = malloc(opaque(kMaxPooled));
  ASSERT_NE(poolalloc_owns(p), 0);
  fill(p, kMaxPooled, 3);
  void* q = realloc(p, opaque(kMaxPooled + 1));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(poolalloc_owns(q), 0);
  EXPECT_TRUE(matches(q, kMaxPooled, 3));
  void* r = realloc(q, opaque(kMaxPooled));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(matches(r, kMaxPooled, 3));
  free(r);
}

// A foreign (glibc) block grown past the pools and shrunk again keeps its contents.
TEST(Realloc, SystemBlockGrowsAndShrinks) {
  void* p = malloc(opaque<size_t>(40000));
  ASSERT_EQ(poolalloc_owns(p), 0);
  fill(p, 40000, 4);
  void* q = realloc(p, opaque<size_t>(4) << 20);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(matches(q, 40000, 4));
  void* r = realloc(q, opaque<size_t>(16));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(matches(r, 16, 4));
  free(r);
}

TEST(Realloc, AcrossSizeClassesKeepsContents) {
  size_t old_size = 16;
  void* p = malloc(old_size);
  fill(p, old_size, old_size);
  for (size_t n : {32u, 48u, 1000u, 16u, 8000u, 32768u, 100u}) {
    void* q = realloc(p, opaque(n));
    ASSERT_NE(poolalloc_owns(q), 0) << n;
    size_t kept = std::min(old_size, n);
    ASSERT_EQ(first_mismatch(q, kept, old_size), kept) << old_size << " -> " << n;
    fill(q, n, n);
    p = q;
    old_size = n;
  }
  free(p);
}

std::string hex_address(const void* p) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x0*%lx",
                static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  return hex;
}

std::string address_regex(const void* p) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  // One line starting with "poolalloc: " that names the address (zero padding allowed).
  return std::string("poolalloc: [^\n]*0x0*") + hex;
}

// The "fast" death-test style forks, so the child frees the very address the regex names.
class BadFreeDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

TEST_F(BadFreeDeathTest, InteriorPointerOfAPooledBlockAborts) {
  auto* block = static_cast<char*>(malloc(opaque<size_t>(64)));
  ASSERT_NE(poolalloc_owns(block), 0);
  char* interior = hide(block + 16);
  EXPECT_DEATH(free(interior), address_regex(interior));
  free(block);
}

// malloc.md: an interior pointer "is reported and the process aborts, from free, realloc and
// malloc_usable_size", not only from free.
TEST_F(BadFreeDeathTest, InteriorPointerAbortsInReallocAndMallocUsableSize) {
  auto* block = static_cast<char*>(malloc(opaque<size_t>(64)));
  ASSERT_NE(poolalloc_owns(block), 0);
  char* interior = hide(block + 16);
  const auto message = [&](const char* operation) {
    return std::string("^poolalloc: ") + operation + "\\(" + hex_address(interior) +
           "\\): not a block: it points 16 bytes into the 64-byte block at " + hex_address(block) +
           " \\(size class 3\\)\n";
  };
  EXPECT_DEATH(hide(realloc(interior, opaque<size_t>(8))), message("realloc"));
  EXPECT_DEATH(malloc_usable_size(interior), message("malloc_usable_size"));
  free(block);
}

TEST_F(BadFreeDeathTest, MisalignedPointerInThePoolRegionAborts) {
  auto* block = static_cast<char*>(malloc(opaque<size_t>(256)));
  ASSERT_NE(poolalloc_owns(block), 0);
  char* misaligned = hide(block + 1);
  EXPECT_DEATH(free(misaligned), address_regex(misaligned));
  char* last_byte = hide(block + 255);
  EXPECT_DEATH(free(last_byte), address_regex(last_byte));
  free(block);
}

// Every size class, in order: its block size is malloc_usable_size of its smallest request.
std::vector<size_t> class_sizes() {
  std::vector<size_t> sizes;
  for (size_t n = 16; n <= kMaxPooled; n += 16) {
    void* p = malloc(opaque(n));
    const size_t usable = malloc_usable_size(p);
    free(p);
    if (sizes.empty() || sizes.back() != usable) sizes.push_back(usable);
  }
  return sizes;
}

constexpr size_t kSpanSize = size_t{128} << 10;  // spans start on multiples of their size

// The tail of a span whose block size does not divide it: the first byte past its last whole
// block lies on a multiple of the block size but starts no block. Accepted, it would be handed
// out again and its block would overlap the first block of the next span.
std::string tail_message(const char* operation, const void* tail, size_t size, size_t cls) {
  return std::string("poolalloc: ") + operation + "\\(" + hex_address(tail) +
         "\\): not a block: it points 0 bytes past the last whole " + std::to_string(size) +
         "-byte block of its span \\(size class " + std::to_string(cls) + "\\), into the " +
         std::to_string(kSpanSize % size) + " bytes at the span's end that no block uses\n";
}

TEST_F(BadFreeDeathTest, PointerPastTheLastWholeBlockOfASpanAborts) {
  const std::vector<size_t> sizes = class_sizes();
  ASSERT_EQ(sizes.size(), 72u);
  size_t tested = 0;
  for (size_t cls = 0; cls < sizes.size(); ++cls) {
    const size_t size = sizes[cls];
    if (kSpanSize % size == 0) continue;
    auto* block = static_cast<char*>(malloc(opaque(size)));
    ASSERT_NE(poolalloc_owns(block), 0);
    char* span = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(block) & ~(kSpanSize - 1));
    char* tail = hide(span + kSpanSize / size * size);
    EXPECT_EQ(poolalloc_owns(tail), 0) << size << "-byte class";
    EXPECT_DEATH(free(tail), tail_message("free", tail, size, cls));
    EXPECT_DEATH(hide(realloc(tail, opaque<size_t>(8))), tail_message("realloc", tail, size, cls));
    EXPECT_DEATH(malloc_usable_size(tail), tail_message("malloc_usable_size", tail, size, cls));
    free(block);
    ++tested;
  }
  EXPECT_EQ(tested, 60u);
}

// The last whole block of a span is a block like any other.
TEST(Owns, LastWholeBlockOfASpanIsABlock) {
  for (size_t size : class_sizes()) {
    auto* block = static_cast<char*>(malloc(opaque(size)));
    char* span = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(block) & ~(kSpanSize - 1));
    char* last = hide(span + (kSpanSize / size - 1) * size);
    EXPECT_NE(poolalloc_owns(last), 0) << size << "-byte class";
    EXPECT_EQ(malloc_usable_size(last), size);
    free(block);
  }
}

TEST(Stats, NullIsRejected) {
  EXPECT_EQ(poolalloc_get_stats(nullptr), -1);
}

poolalloc_stats read_stats() {
  poolalloc_stats stats{};
  EXPECT_EQ(poolalloc_get_stats(&stats), 0);
  return stats;
}

TEST(Stats, PooledCountersFollowSmallAllocations) {
  // All snapshots first, assertions after: a failing assertion allocates its message.
  const poolalloc_stats before = read_stats();
  void* p = malloc(opaque<size_t>(64));
  const poolalloc_stats during = read_stats();
  free(p);
  const poolalloc_stats after = read_stats();
  EXPECT_GT(during.pooled_requests, before.pooled_requests);
  EXPECT_GT(during.pooled_live, before.pooled_live);
  EXPECT_GE(during.pooled_peak, during.pooled_live);
  EXPECT_GT(during.spans_in_use, 0u);
  EXPECT_GT(during.bytes_held, 0u);
  EXPECT_GT(during.resident_bytes, 0u);
  EXPECT_EQ(during.system_requests, before.system_requests) << "malloc(64) went to the system";
  EXPECT_GT(after.pooled_frees, during.pooled_frees);
  EXPECT_LT(after.pooled_live, during.pooled_live);
  EXPECT_EQ(after.pooled_live, after.pooled_requests - after.pooled_frees);
}

TEST(Stats, SystemCountersFollowLargeAllocations) {
  const poolalloc_stats before = read_stats();
  void* p = malloc(opaque<size_t>(1) << 20);
  const poolalloc_stats after = read_stats();
  free(p);
  EXPECT_GT(after.system_requests, before.system_requests);
  EXPECT_GE(after.system_bytes - before.system_bytes, size_t{1} << 20);
  EXPECT_EQ(after.pooled_requests, before.pooled_requests) << "malloc(1 MiB) was pooled";
}

TEST(Stats, PrintStatsWritesToTheGivenDescriptor) {
  void* p = malloc(opaque<size_t>(64));
  int fd = memfd_create("poolalloc-stats", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  poolalloc_print_stats(fd);
  EXPECT_GT(lseek(fd, 0, SEEK_CUR), 0) << "poolalloc_print_stats wrote nothing";
  close(fd);
  free(p);
}

}  // namespace
}  // namespace malloc_test
