#include "stack_capture.hpp"

#include <dlfcn.h>

#include "thread_cache.hpp"

namespace poolalloc::internal {
bool load_stack_unwinder() {
  if (g_backtrace.load(std::memory_order_acquire) != nullptr) return true;
  const OwnAllocationsScope own;  // what dlopen allocates is not the program's
  void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  auto* backtrace = reinterpret_cast<Backtrace>(dlsym(library, "unw_backtrace"));
  g_backtrace.store(backtrace, std::memory_order_release);
  return backtrace != nullptr;
}

}  // namespace poolalloc::internal
