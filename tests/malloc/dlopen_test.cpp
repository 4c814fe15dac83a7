// A module with thread-local storage, loaded with dlopen while poolalloc is the malloc, used
// from 64 threads (the loader allocates each thread's TLS block with malloc, and frees it at
// thread exit), then unloaded; twice, and once with RTLD_DEEPBIND. A deep-bound module calls
// glibc's malloc directly: the blocks it hands out must reach glibc again through poolalloc's
// free, realloc and malloc_usable_size. (The other way round, a poolalloc block given to the
// module's glibc free, cannot work with any interposed malloc on glibc 2.34 and later.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <poolalloc/poolalloc.h>

#include <cstring>

#include <string>
#include <thread>
#include <vector>

namespace {

using Work = std::size_t (*)(int);

std::size_t expected_length(int seed) {
  std::string history;
  for (int i = 0; i < 100; ++i) history += std::to_string(seed + i);
  return history.size() + static_cast<unsigned char>(seed & 0xff);
}

void use_module_from_threads(int flags) {
  void* module = dlopen(DLOPEN_MODULE, flags);
  ASSERT_NE(module, nullptr) << dlerror();
  auto work = reinterpret_cast<Work>(dlsym(module, "dlopen_module_work"));
  ASSERT_NE(work, nullptr) << dlerror();
  std::vector<std::thread> threads;
  std::vector<std::size_t> lengths(64);
  for (int t = 0; t < 64; ++t) threads.emplace_back([&, t] { lengths[t] = work(t); });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(lengths[t], expected_length(t)) << t;
  EXPECT_EQ(dlclose(module), 0);
}

TEST(Dlopen, ThreadLocalStorageOfALoadedModuleFrom64Threads) {
  use_module_from_threads(RTLD_NOW);
  use_module_from_threads(RTLD_NOW);
}

TEST(Dlopen, DeepBindModule) {
  use_module_from_threads(RTLD_NOW | RTLD_DEEPBIND);
}

}  // namespace
