// libpoolalloc.a linked into a Windows program (mingw-w64, run under wine): every form of
// operator new and delete is the pools', the C API serves and takes blocks, blocks of the C
// runtime reach poolalloc_free and delete safely, and a pointer that neither handed out is
// reported.
#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>
#include <windows.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "c_runtime_blocks.hpp"
#include "opaque_pointer.hpp"

namespace {

TEST(WindowsOperators, EveryFormOfOperatorNewIsServedByThePools) {
  void* plain = ::operator new(64);
  void* array = ::operator new[](64);
  void* nothrow = ::operator new(64, std::nothrow);
  void* nothrow_array = ::operator new[](64, std::nothrow);
  void* aligned = ::operator new (64, std::align_val_t{64});
  void* aligned_array = ::operator new[](64, std::align_val_t{64});
  void* aligned_nothrow = ::operator new (64, std::align_val_t{64}, std::nothrow);
  void* aligned_nothrow_array = ::operator new[](64, std::align_val_t{64}, std::nothrow);
  for (void* p : {plain, array, nothrow, nothrow_array, aligned, aligned_array, aligned_nothrow,
                  aligned_nothrow_array})
    EXPECT_TRUE(poolalloc_owns(p)) << p;
  for (void* p : {aligned, aligned_array, aligned_nothrow, aligned_nothrow_array})
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  poolalloc_stats before{};
  ASSERT_EQ(poolalloc_get_stats(&before), 0);
  ::operator delete(plain, 64);
  ::operator delete[](array, 64);
  ::operator delete(nothrow, std::nothrow);
  ::operator delete[](nothrow_array, std::nothrow);
  ::operator delete (aligned, 64, std::align_val_t{64});
  ::operator delete[](aligned_array, std::align_val_t{64});
  ::operator delete (aligned_nothrow, std::align_val_t{64}, std::nothrow);
  ::operator delete[](aligned_nothrow_array, std::align_val_t{64}, std::nothrow);
  poolalloc_stats after{};
  ASSERT_EQ(poolalloc_get_stats(&after), 0);
  EXPECT_EQ(after.pooled_frees - before.pooled_frees, 8u);
}

TEST(WindowsOperators, ANewExpressionOfTheProgramIsServedByThePools) {
  struct Monster {
    float x = 0, y = 0;
    int health = 100;
  };
  auto* monster = new Monster;
  EXPECT_TRUE(poolalloc_owns(monster));
  delete monster;
}

TEST(WindowsOperators, AFailedOperatorNewThrowsBadAlloc) {
  EXPECT_THROW(static_cast<void>(::operator new (std::size_t{1} << 62)), std::bad_alloc);
  EXPECT_EQ(::operator new (std::size_t{1} << 62, std::nothrow), nullptr);
}

TEST(WindowsCApi, TheCApiServesAndTakesBlocks) {
  void* small = poolalloc_malloc(100);
  EXPECT_TRUE(poolalloc_owns(small));
  EXPECT_GE(poolalloc_usable_size(small), 100u);
  std::memset(small, 7, 100);
  void* grown = poolalloc_realloc(small, 1000);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(grown)[99], 7);
  void* aligned = poolalloc_aligned_alloc(4096, 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 4096, 0u);
  EXPECT_TRUE(poolalloc_owns(aligned));
  poolalloc_free(grown);
  poolalloc_free(aligned);
  poolalloc_free(nullptr);
  EXPECT_EQ(poolalloc_realloc(poolalloc_malloc(8), 0), nullptr);  // freed, as glibc does
}

TEST(WindowsCApi, PoolallocCallocZeroesItsBlockAndRefusesAnOverflowingProduct) {
  auto* reused = static_cast<unsigned char*>(poolalloc_malloc(1000));
  std::memset(reused, 0xa5, 1000);
  poolalloc_free(reused);
  auto* zeroed = static_cast<unsigned char*>(poolalloc_calloc(10, 100));  // the same class
  ASSERT_NE(zeroed, nullptr);
  EXPECT_TRUE(poolalloc_owns(zeroed));
  for (std::size_t i = 0; i < poolalloc_usable_size(zeroed); ++i) ASSERT_EQ(zeroed[i], 0) << i;
  poolalloc_free(zeroed);
  auto* large = static_cast<unsigned char*>(poolalloc_calloc(1000, 100));
  ASSERT_NE(large, nullptr);
  EXPECT_FALSE(poolalloc_owns(large));
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(large[i], 0) << i;
  poolalloc_free(large);
  errno = 0;
  EXPECT_EQ(poolalloc_calloc(SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void* empty = poolalloc_calloc(0, 8);
  EXPECT_NE(empty, nullptr);
  poolalloc_free(empty);
}

// The tag example of docs/statistics.md, with poolalloc_calloc: its blocks reach the pools, and
// the tag counts them, on Windows as on Linux.
TEST(WindowsTags, ABlockOfPoolallocCallocIsChargedToTheCurrentTag) {
  const int ai = poolalloc_tag_register("AI");
  ASSERT_EQ(poolalloc_tag_push(ai), 0);
  void* agents = poolalloc_calloc(1000, 16);
  poolalloc_tag_pop();
  poolalloc_tag_stats stats{};
  ASSERT_EQ(poolalloc_get_tag_stats(ai, &stats), 0);
  EXPECT_EQ(stats.live_bytes, poolalloc_usable_size(agents));  // its size class's
  EXPECT_EQ(stats.live_blocks, 1u);
  poolalloc_free(agents);
}

TEST(WindowsCApi, BlocksAboveThePoolsComeFromTheCRuntimesHeap) {
  void* large = poolalloc_malloc(1 << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_FALSE(poolalloc_owns(large));
  EXPECT_GE(poolalloc_usable_size(large), std::size_t{1} << 20);
  void* aligned_large = poolalloc_aligned_alloc(1 << 16, 1 << 20);
  ASSERT_NE(aligned_large, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned_large) % (1 << 16), 0u);
  EXPECT_GE(poolalloc_usable_size(aligned_large), std::size_t{1} << 20);
  void* moved = poolalloc_realloc(aligned_large, 2 << 20);
  ASSERT_NE(moved, nullptr);
  poolalloc_free(moved);
  poolalloc_free(large);
}

TEST(WindowsCApi, ABlockOfTheCRuntimesMallocCanBeGivenToPoolallocFreeAndDelete) {
  expect_c_runtime_blocks_taken();
}

TEST(WindowsCApiDeathTest, APointerNeitherThePoolsNorTheCRuntimeHandedOutIsReported) {
  static char not_a_block[64];
  EXPECT_DEATH(poolalloc_free(opaque(not_a_block + 16)),
               "poolalloc: free\\(\\w+\\): not a block: not the pools', nor a live block of "
               "the C runtime's heap");
  EXPECT_DEATH(::operator delete(opaque(not_a_block + 32)), "not a block");
}

DWORD WINAPI free_twice_then_delete(void* block) {
  std::free(opaque(block));
  ::operator delete(opaque(block));  // the thread's first call into poolalloc
  return 0;
}

// The C runtime's heap says whether it holds a block (HeapValidate): one it freed already is not
// given to its free a second time, also by the first call of a thread, which allocates the
// thread's emulated thread-local storage from that heap (it was handed the freed block, and
// freed it). (Freed inside the statement: the death test's own strdup of its pattern would
// otherwise be handed the freed block.)
TEST(WindowsCApiDeathTest, ABlockTheCRuntimeFreedAlreadyIsReported) {
  void* block = opaque(std::malloc(100));
  EXPECT_DEATH(
      {
        std::free(opaque(block));
        poolalloc_free(opaque(block));
      },
      "poolalloc: free\\(\\w+\\): not a block: not the pools', nor a live block of the C "
      "runtime's heap \\(one it freed already");
  EXPECT_DEATH(
      {
        HANDLE thread = CreateThread(nullptr, 0, free_twice_then_delete, block, 0, nullptr);
        WaitForSingleObject(thread, INFINITE);
      },
      "poolalloc: free\\(\\w+\\): not a block: not the pools', nor a live block of the C "
      "runtime's heap \\(one it freed already");
  std::free(block);
}

TEST(WindowsCApiDeathTest, AnInteriorPointerIntoThePoolsIsReported) {
  char* block = static_cast<char*>(poolalloc_malloc(64));
  EXPECT_DEATH(poolalloc_free(block + 16), "16 bytes into the 64-byte block");
  poolalloc_free(block);
}

TEST(WindowsCApiDeathTest, ADoubleFreeIsReported) {
  void* block = poolalloc_malloc(64);
  poolalloc_free(block);
  EXPECT_DEATH(poolalloc_free(block), "double free of the 64-byte block");
}

// A block above the pools (the C runtime's) leaves its memory tag at its free, as on Linux.
TEST(WindowsTags, ABlockAboveThePoolsIsDischargedFromItsTagAtItsFree) {
  const int tag = poolalloc_tag_register("windows_large");
  ASSERT_GT(tag, 0);
  ASSERT_EQ(poolalloc_tag_push(tag), 0);
  void* large = poolalloc_malloc(100000);
  void* allocated = ::operator new(50000);
  poolalloc_tag_stats charged{};
  ASSERT_EQ(poolalloc_get_tag_stats(tag, &charged), 0);
  poolalloc_free(large);
  ::operator delete(allocated);
  poolalloc_tag_stats discharged{};
  ASSERT_EQ(poolalloc_get_tag_stats(tag, &discharged), 0);
  poolalloc_tag_pop();
  EXPECT_EQ(charged.live_bytes, 150000u);
  EXPECT_EQ(charged.live_blocks, 2u);
  EXPECT_EQ(discharged.live_bytes, 0u);
  EXPECT_EQ(discharged.live_blocks, 0u);
}

TEST(WindowsStats, ThePrintedTableCountsThePooledRequests) {
  poolalloc_stats stats{};
  ASSERT_EQ(poolalloc_get_stats(&stats), 0);
  EXPECT_GT(stats.pooled_requests, 0u);
  EXPECT_GE(stats.thread_caches, 1u);
  EXPECT_EQ(poolalloc_get_stats(nullptr), -1);
  EXPECT_STREQ(poolalloc_version(), POOLALLOC_VERSION_STRING);
}

// The table names what Windows builds and nothing it leaves out: no large-block cache.
TEST(WindowsStats, ThePrintedTableHasNoLineOfTheLargeBlockCache) {
  char path[MAX_PATH];
  ASSERT_NE(GetTempFileNameA(".", "pa", 0, path), 0u);
  FILE* file = std::fopen(path, "w+");
  ASSERT_NE(file, nullptr);
  poolalloc_print_stats(_fileno(file));
  std::rewind(file);
  std::string table;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) table += static_cast<char>(c);
  std::fclose(file);
  std::remove(path);
  EXPECT_NE(table.find("pooled requests: "), std::string::npos) << table;
  EXPECT_EQ(table.find("large blocks"), std::string::npos) << table;
}

// A failed request of the C API sets errno to ENOMEM whichever heap failed it: the pools', or the
// C runtime's behind them (whose calloc and realloc under wine leave errno as it was).
TEST(WindowsCApi, EveryFailedRequestSetsEnomem) {
  constexpr std::size_t kHuge = std::size_t{1} << 40;
  const auto fails_with_enomem = [](void* result) {
    const bool failed = result == nullptr && errno == ENOMEM;
    poolalloc_free(result);
    return failed;
  };
  errno = 0;
  EXPECT_TRUE(fails_with_enomem(poolalloc_malloc(kHuge)));
  errno = 0;
  EXPECT_TRUE(fails_with_enomem(poolalloc_calloc(1, kHuge)));
  errno = 0;
  EXPECT_TRUE(fails_with_enomem(poolalloc_aligned_alloc(4096, kHuge)));
  for (const std::size_t size : {std::size_t{100}, std::size_t{100000}}) {
    void* block = poolalloc_malloc(size);
    errno = 0;
    EXPECT_TRUE(fails_with_enomem(poolalloc_realloc(block, kHuge))) << size << " bytes";
    poolalloc_free(block);
  }
  char* crt_block = _strdup("a block of the C runtime");
  errno = 0;
  EXPECT_TRUE(fails_with_enomem(poolalloc_realloc(crt_block, kHuge)));
  std::free(crt_block);
}

}  // namespace
