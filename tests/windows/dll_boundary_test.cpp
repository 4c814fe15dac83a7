// Blocks that cross a DLL's boundary, in a program linked with libpoolalloc.a (mingw-w64, run
// under wine). A DLL keeps its own operator new: the C runtime's malloc when it links no
// allocator, or pools of its own when it links libpoolalloc.a too. A block of the C runtime
// reaching the program's delete goes to the C runtime's free; a block of another instance's
// pools, in either direction, is reported, never handed to the wrong heap. A DLL with pools of its
// own can be unloaded while threads that used them run on.
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
               "not a block: not the pools', nor a live block of the C runtime's heap");
  plugin.delete_block(block);
}

TEST(WindowsDllsDeathTest, ABlockOfTheProgramsPoolsReachingADllsOwnPoolsIsReported) {
  const Plugin plugin("windows_plugin_pools.dll");
  ASSERT_NE(plugin.delete_block, nullptr);
  char* block = new char[64];
  EXPECT_DEATH(plugin.delete_block(block),
               "not a block: not the pools', nor a live block of the C runtime's heap");
  delete[] block;
}

struct PluginUser {
  char* (*new_block)();
  void (*delete_block)(char*);
  HANDLE used;
  HANDLE unloaded;
};

DWORD WINAPI use_the_plugin_and_wait_for_its_unload(void* context) {
  const auto* user = static_cast<const PluginUser*>(context);
  user->delete_block(user->new_block());  // the DLL's pools now hold a cache for this thread
  SetEvent(user->used);
  WaitForSingleObject(user->unloaded, INFINITE);
  return 0;  // its exit must not call into the DLL, which is gone
}

DWORD WINAPI exit_at_once(void*) {
  return 0;
}

// The DLL's thread-exit callback (fiber-local storage) is given up as the DLL is unloaded: the
// exit of a thread that used the DLL's pools, a new thread's, and the process's own, do not call
// into the unloaded image (they crashed there).
TEST(WindowsDlls, ADllThatLinksThePoolsCanBeUnloadedWhileThreadsThatUsedItRunOn) {
  Plugin plugin("windows_plugin_pools.dll");
  ASSERT_NE(plugin.new_block, nullptr);
  PluginUser user{plugin.new_block, plugin.delete_block,
                  CreateEventA(nullptr, TRUE, FALSE, nullptr),
                  CreateEventA(nullptr, TRUE, FALSE, nullptr)};
  user.delete_block(user.new_block());  // and one for this thread
  HANDLE thread =
      CreateThread(nullptr, 0, use_the_plugin_and_wait_for_its_unload, &user, 0, nullptr);
  ASSERT_NE(thread, nullptr);
  WaitForSingleObject(user.used, INFINITE);
  ASSERT_TRUE(FreeLibrary(plugin.module));
  ASSERT_EQ(GetModuleHandleA("windows_plugin_pools.dll"), nullptr);  // unloaded, not just released
  SetEvent(user.unloaded);
  EXPECT_EQ(WaitForSingleObject(thread, INFINITE), WAIT_OBJECT_0);
  DWORD code = 1;
  GetExitCodeThread(thread, &code);
  EXPECT_EQ(code, 0u);
  CloseHandle(thread);
  HANDLE another = CreateThread(nullptr, 0, exit_at_once, nullptr, 0, nullptr);
  EXPECT_EQ(WaitForSingleObject(another, INFINITE), WAIT_OBJECT_0);
  CloseHandle(another);
  CloseHandle(user.used);
  CloseHandle(user.unloaded);
}

}  // namespace
