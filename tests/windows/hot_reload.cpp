// A game that reloads a plugin hot, as docs/windows.md advises: the plugin's DLL is freed, renamed
// (a file mapped for the debug build's names cannot be overwritten) and rebuilt at its path
// (here: the second build copied there), then loaded again. Each build frees a block twice, in a
// function of another name at the same place (hot_reload_plugin.cpp): run with
// POOLALLOC_ON_ERROR=report, the second report must name the second build's function.
#include <poolalloc/poolalloc.h>
#include <windows.h>

#include <cstddef>
#include <cstdio>

namespace {

using Run = void (*)(void* (*)(std::size_t), void (*)(void*));

bool load_and_run(const char* path) {
  const HMODULE plugin = LoadLibraryA(path);
  if (plugin == nullptr) return false;
  const auto run = reinterpret_cast<Run>(reinterpret_cast<void*>(GetProcAddress(plugin, "run")));
  if (run != nullptr) run(poolalloc_malloc, poolalloc_free);
  std::fflush(stderr);
  return run != nullptr && FreeLibrary(plugin) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  DeleteFileA("hot_reload_plugin.dll");
  DeleteFileA("hot_reload_plugin_old.dll");
  if (!CopyFileA(argv[1], "hot_reload_plugin.dll", FALSE) ||
      !load_and_run(".\\hot_reload_plugin.dll") ||
      !MoveFileA("hot_reload_plugin.dll", "hot_reload_plugin_old.dll") ||
      !CopyFileA(argv[2], "hot_reload_plugin.dll", FALSE) ||
      !load_and_run(".\\hot_reload_plugin.dll"))
    return 1;
  return 0;
}
