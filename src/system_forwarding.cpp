#include "system_forwarding.hpp"

#include <dlfcn.h>

namespace poolalloc::internal {
namespace {

// glibc's own definition of `name`. Not dlsym(RTLD_NEXT): the next definition after ours can
// be another allocator's (redis-server links jemalloc), which knows nothing of glibc's blocks.
template <class Function>
Function glibc_function(std::atomic<Function>& cached, const char* name) {
  Function function = cached.load(std::memory_order_acquire);
  if (function == nullptr) {
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (libc == nullptr) return nullptr;
    function = reinterpret_cast<Function>(dlsym(libc, name));
    dlclose(libc);
    cached.store(function, std::memory_order_release);
  }
  return function;
}

}  // namespace

std::size_t system_usable_size(void* p) {
  static std::atomic<std::size_t (*)(void*)> cached{nullptr};
  auto function = glibc_function(cached, "malloc_usable_size");
  return function != nullptr ? function(p) : 0;
}

int system_trim(std::size_t pad) {
  static std::atomic<int (*)(std::size_t)> cached{nullptr};
  auto function = glibc_function(cached, "malloc_trim");
  return function != nullptr ? function(pad) : 0;
}

struct mallinfo2 system_mallinfo2() {
  static std::atomic<struct mallinfo2 (*)()> cached{nullptr};
  auto function = glibc_function(cached, "mallinfo2");
  return function != nullptr ? function() : (struct mallinfo2){};
}

int system_malloc_info(int options, FILE* stream) {
  static std::atomic<int (*)(int, FILE*)> cached{nullptr};
  auto function = glibc_function(cached, "malloc_info");
  return function != nullptr ? function(options, stream) : 0;
}

}  // namespace poolalloc::internal
