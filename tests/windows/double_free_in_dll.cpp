// A double free inside a stripped DLL's pools (debug_plugin.cpp), at the default options: by an
// exported function ("exported"), or the second free by a function that the DLL does not export
// ("unexported").
#include <cstring>

extern "C" __declspec(dllimport) void* debug_plugin_allocate();
extern "C" __declspec(dllimport) void debug_plugin_free(void* block);
extern "C" __declspec(dllimport) void debug_plugin_free_unexported(void* block);

int main(int argc, char** argv) {
  void* block = debug_plugin_allocate();
  debug_plugin_free(block);
  if (argc > 1 && std::strcmp(argv[1], "unexported") == 0) {
    debug_plugin_free_unexported(block);
  } else {
    debug_plugin_free(block);
  }
  return 0;
}
