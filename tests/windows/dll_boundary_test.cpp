// Blocks that cross a DLL's boundary, in a program linked with libpoolalloc.a (mingw-w64, run
// under wine). A DLL keeps its own operator new: the C runtime's malloc when it links no
// allocator, or pools of its own when it links libpoolalloc.a too. A block of the C runtime
// reaching the program's delete goes to the C runtime's free; a block of another instance's
// pools, in either direction, is reported, never handed to the wrong heap.
#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>
#include <windows.h>

namespace {

struct Plugin {
  explicit Plugin(const char* name) : module(LoadLibraryA(name)) {
    if (module == nullptr) return;
    new_block = reinterpret_cast<char* (*)()>(
        reinterpret_cast<void*>(GetProcAddress(module, "plugin_new_block")));
    delete_block = reinterpret_cast<void (*)(char*)>(
        reinterpret_cast<void*>(GetProcAddress(module, "plugin_delete_block")));
  }
  HMODULE module;
  char* (*new_block)() = nullptr;
  void (*delete_block)(char*) = nullptr;
};

// The pointer, hidden from the compiler's checks of mismatched deletes.
char* opaque(char* p) {
  static char* volatile passed;
  passed = p;
  return passed;
}

TEST(WindowsDlls, ABlockThatADllsOwnNewAllocatedIsFreedByTheProgramsDelete) {
  const Plugin plugin("windows_plugin_crt.dll");
  ASSERT_NE(plugin.new_block, nullptr);
  const poolalloc_stats before = [] {
    poolalloc_stats stats{};
    poolalloc_get_stats(&stats);
    return stats;
  }();
  for (int i = 0; i < 1000; ++i) {
    char* block = plugin.new_block();
    EXPECT_FALSE(poolalloc_owns(block));
    delete[] opaque(block);  // the C runtime's block: poolalloc's delete gives it to its free
  }
  poolalloc_stats after{};
  poolalloc_get_stats(&after);
  EXPECT_EQ(after.pooled_frees, before.pooled_frees);
}

TEST(WindowsDllsDeathTest, ABlockOfADllsOwnPoolsReachingTheProgramsDeleteIsReported) {
  const Plugin plugin("windows_plugin_pools.dll");
  ASSERT_NE(plugin.new_block, nullptr);
  char* block = plugin.new_block();
  EXPECT_FALSE(poolalloc_owns(block));  // the DLL's region, not the program's
  EXPECT_DEATH(delete[] opaque(block),
               "not a block: neither the pools nor the C runtime's heap handed it out");
  plugin.delete_block(block);
}

TEST(WindowsDllsDeathTest, ABlockOfTheProgramsPoolsReachingADllsOwnPoolsIsReported) {
  const Plugin plugin("windows_plugin_pools.dll");
  ASSERT_NE(plugin.delete_block, nullptr);
  char* block = new char[64];
  EXPECT_DEATH(plugin.delete_block(block),
               "not a block: neither the pools nor the C runtime's heap handed it out");
  delete[] block;
}

}  // namespace
