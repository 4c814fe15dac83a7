#include "system_forwarding.hpp"

#include <dlfcn.h>

namespace poolalloc::internal {
namespace {

// glibc's definition of `name`: the next one after ours in the lookup order.
template <class Function>
Function glibc_function(std::atomic<Function>& cached, const char* name) {
  Function function = cached.load(std::memory_order_acquire);
  if (function == nullptr) {
    function = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
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

}  // namespace poolalloc::internal
