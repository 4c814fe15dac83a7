// A module the dlopen test loads at run time: its thread-local storage is allocated by the
// dynamic loader through malloc, in every thread that touches it.
#include <cstdlib>
#include <cstring>
#include <string>

#define MODULE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
thread_local std::string t_history;  // thread-local with a destructor, run at thread exit
__thread char t_scratch[4096];       // a TLS block the loader allocates per thread
}  // namespace

MODULE_EXPORT std::size_t dlopen_module_work(int seed) {
  std::memset(t_scratch, seed & 0xff, sizeof t_scratch);
  for (int i = 0; i < 100; ++i) t_history += std::to_string(seed + i);
  std::string copy = t_history;
  return copy.size() + static_cast<unsigned char>(t_scratch[17]);
}

// The module's own malloc: glibc's when the module was loaded with RTLD_DEEPBIND.
MODULE_EXPORT void* dlopen_module_malloc(std::size_t size) {
  return std::malloc(size);
}
