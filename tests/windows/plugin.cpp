// A DLL that allocates and frees for its host (dll_boundary_test.cpp): built once with its own
// C++ runtime alone, whose new is the C runtime's malloc (windows_plugin_crt), and once with
// libpoolalloc.a linked in, which gives it pools of its own (windows_plugin_pools).
extern "C" __declspec(dllexport) char* plugin_new_block() {
  return new char[64];
}
extern "C" __declspec(dllexport) void plugin_delete_block(char* block) {
  delete[] block;
}
