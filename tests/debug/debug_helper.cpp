// A program that debug_process_test runs, linked against libpoolalloc-debug.so, in the
// environment the test chooses (POOLALLOC_ON_ERROR, POOLALLOC_LEAKS): argv[1] names what it
// does. Whatever the debug heap reports goes to stderr, which the test reads.
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "debug_sites.hpp"
#include "malloc_test_util.hpp"

using malloc_test::hide;
using malloc_test::opaque;

namespace {

// Mistakes that POOLALLOC_ON_ERROR=report lets the program survive; it then says so on stdout.
int make_mistakes() {
  void* p = debug_site_malloc(opaque<std::size_t>(24));
  debug_site_free(p);
  debug_site_second_free(hide(p));
  auto* q = hide(static_cast<char*>(debug_site_malloc(opaque<std::size_t>(24))));
  q[24] = 0;
  debug_site_free(q);
  std::puts("still running");
  return 0;
}

DEBUG_SITE void* leak_site_small(std::size_t size) {
  void* p = std::malloc(size);
  asm volatile("" : "+r"(p));
  return p;
}

DEBUG_SITE void* leak_site_large(std::size_t size) {
  void* p = std::malloc(size);
  asm volatile("" : "+r"(p));
  return p;
}

// Leaks 3 x 100 bytes at one call site and 1 x 5000 bytes at another.
void* g_leaked[4];
int leak() {
  for (int i = 0; i < 3; ++i) g_leaked[i] = leak_site_small(opaque<std::size_t>(100));
  g_leaked[3] = leak_site_large(opaque<std::size_t>(5000));
  return 0;
}

struct alignas(64) CacheLine {
  std::uint64_t words[8];
};

struct alignas(4096) Page {
  unsigned char bytes[4096];
};

// A realistic, correct program: containers, strings, realloc growth, over-aligned new and
// threads. The debug heap must stay silent.
void churn(unsigned seed) {
  std::mt19937 rng(seed);
  std::map<std::string, std::vector<int>> map;
  for (int round = 0; round < 20000; ++round) {
    std::string key = "key-" + std::to_string(rng() % 512) + std::string(rng() % 40, 'k');
    auto& values = map[key];
    values.push_back(static_cast<int>(rng()));
    if (rng() % 4 == 0) map.erase(map.begin());
    if (rng() % 64 == 0) values.shrink_to_fit();
  }
  std::vector<std::unique_ptr<CacheLine>> lines;
  for (int i = 0; i < 200; ++i) lines.push_back(std::make_unique<CacheLine>());
  for (const auto& line : lines) {
    if (reinterpret_cast<std::uintptr_t>(line.get()) % 64 != 0) std::abort();
  }
  auto page = std::make_unique<Page>();
  if (reinterpret_cast<std::uintptr_t>(page.get()) % 4096 != 0) std::abort();
  char* text = nullptr;
  std::size_t length = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::size_t grow = 1 + rng() % 100;
    text = static_cast<char*>(std::realloc(text, length + grow));
    if (text == nullptr) std::abort();
    std::memset(text + length, 'a' + i % 26, grow);
    length += grow;
  }
  for (std::size_t i = 0; i < length; ++i) {
    if (text[i] < 'a' || text[i] > 'z') std::abort();
  }
  if (malloc_usable_size(text) != length) std::abort();
  std::free(text);
  void* aligned = nullptr;
  if (posix_memalign(&aligned, 256, 1000) != 0) std::abort();
  std::free(aligned);
  std::free(std::calloc(100, 400));  // from the system allocator
}

int workload() {
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(churn, t + 1);
  churn(0);
  for (auto& thread : threads) thread.join();
  std::puts("done");
  return 0;
}

// Reports written while another thread loads and unloads a module: the loader allocates while
// it holds its own lock, so a report that asked the loader anything (dladdr) while holding the
// debug heap's lock would wait for the loader while the loader waits for the heap. Interior
// frees, reported and survived (POOLALLOC_ON_ERROR=report), until the loader has loaded the
// module 300 times; it prints how many. An alarm ends a run that hangs.
int reports_during_dlopen() {
  alarm(20);
  std::atomic<bool> stop{false};
  std::atomic<unsigned> cycles{0};
  std::thread loader([&] {
    while (!stop.load()) {
      void* module = dlopen(RELOAD_MODULE, RTLD_NOW | RTLD_LOCAL);
      if (module == nullptr) std::abort();
      dlclose(module);
      cycles.fetch_add(1);
    }
  });
  unsigned reports = 0;
  while (cycles.load() < 300) {
    auto* block = static_cast<char*>(std::malloc(opaque<std::size_t>(32)));
    std::free(hide(block + 8));
    std::free(block);
    ++reports;
  }
  stop.store(true);
  loader.join();
  std::printf("%u\n", reports);
  return 0;
}

// Runs body in a thread that has a cancellation pending (deferred: acted on at its next
// cancellation point), under a watchdog: a report cancelled in the middle, with the heap's lock
// held, leaves the program waiting for ever.
int with_cancel_pending(void (*body)()) {
  alarm(10);
  pthread_t thread;
  void* result = nullptr;
  const int created = pthread_create(
      &thread, nullptr,
      [](void* run) -> void* {
        pthread_cancel(pthread_self());
        reinterpret_cast<void (*)()>(run)();
        pthread_testcancel();
        return nullptr;
      },
      reinterpret_cast<void*>(body));
  if (created != 0 || pthread_join(thread, &result) != 0) return 2;
  return result == PTHREAD_CANCELED ? 0 : 3;
}

// make_mistakes' double free and overflow in a thread with a cancellation pending; the main
// thread then uses the heap.
int mistakes_cancel_pending() {
  const int status = with_cancel_pending([] { make_mistakes(); });
  free(malloc(opaque<std::size_t>(24)));
  return status;
}

// The leak report, and the destructors that write it, run in a thread that calls exit() with a
// cancellation pending.
int leak_exit_cancel_pending() {
  leak();
  return 10 + with_cancel_pending([] { std::exit(0); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string mode = argv[1];
  if (mode == "mistakes") return make_mistakes();
  if (mode == "leak") return leak();
  if (mode == "workload") return workload();
  if (mode == "reports_during_dlopen") return reports_during_dlopen();
  if (mode == "mistakes_cancel_pending") return mistakes_cancel_pending();
  if (mode == "leak_exit_cancel_pending") return leak_exit_cancel_pending();
  return 2;
}
