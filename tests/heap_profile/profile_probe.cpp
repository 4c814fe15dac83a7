// The program that the heap profile's tests (profile_options_test.cpp) run under the preloaded
// library, set up by POOLALLOC_PROFILE_* variables as users set it up:
//   profile_probe live      64 MiB live in blocks of 64 bytes at probe_live_site, then exits
//   profile_probe every     64 MiB allocated and freed in blocks of 1 KiB at probe_churn_site
//   profile_probe peak      64 MiB live at probe_live_site, freed, then 8 MiB at probe_after_peak
//   profile_probe peak-threads  4 threads at once each keep 16 MiB live at probe_live_site
//   profile_probe signal    raises POOLALLOC_PROFILE_SIGNAL's SIGUSR2 20 times while two threads
//                           allocate and free, then exits
//   profile_probe fork      forks 40 children, each allocating then dumping, while two threads
//                           allocate and a third dumps in a loop; exits 0 when every child did
// and, as a game that links the library drives it through the C API (poolalloc.h), with
// sampling turned on by poolalloc_profile_sample(512 KiB) and a dump to the file `call.pb` by
// poolalloc_profile_dump:
//   profile_probe api-live     32 MiB live in blocks of 64 bytes at probe_live_site
//   profile_probe api-freed    the same, freed by four other threads before the dump
//   profile_probe api-off      the same with sampling turned off again first
//   profile_probe api-tagged   32 MiB live at probe_live_site under the memory tag "AI", 32 MiB
//                              at probe_after_peak untagged
//   profile_probe api-threads-first  8 threads each keep one block of 64 MiB at probe_live_site,
//                                    their first malloc
//   profile_probe api-fork-frees     two threads allocate and free at probe_churn_site (nothing
//                                    stays live) while the main thread forks 40 times
//   profile_probe api-fork-free-null the same, and a third thread frees nullptr in a loop
//   profile_probe api-new    sampling at a mean of 16 KiB, 16 MiB live in blocks of 64 bytes from
//                            operator new at probe_new_site, 16 MiB from operator new[] at
//                            probe_new_array_site
//   profile_probe api-signal-dumps  every allocation sampled, 400,000 pairs of malloc and free
//                                   while a timer's signal, every 100 us of the process's time,
//                                   dumps from the program's own handler
//   profile_probe api-own    every allocation sampled while a second thread's first mallocs
//                            start the decay thread and a calloc's block, glibc's, has its size
//                            looked up in glibc for the first time
//   profile_probe api-late-worker    a thread that allocates and frees blocks of 64 bytes at
//                                    probe_churn_site, one at a time, before and after the main
//                                    thread turns sampling on: 64 MiB after
//   profile_probe api-exact    1000 blocks of 100 bytes at probe_live_site, dumped with sampling
//                              off (the debug build's dump is exact)
//   profile_probe api-realloc-fail  every allocation sampled: 16 blocks of 1 MiB at
//                              probe_live_site, each then given to a realloc that fails (ENOMEM)
// It exits with 1 when something it checks fails.
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "poolalloc/poolalloc.h"

__attribute__((noinline)) void* probe_live_site(std::size_t size) {
  return std::malloc(size);
}
__attribute__((noinline)) void* probe_churn_site(std::size_t size) {
  return std::malloc(size);
}
__attribute__((noinline)) void* probe_after_peak(std::size_t size) {
  return std::malloc(size);
}
__attribute__((noinline)) void* probe_new_site(std::size_t size) {
  return ::operator new(size);
}
__attribute__((noinline)) void* probe_new_array_site(std::size_t size) {
  return new char[size];
}

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::atomic<int> g_handler_dumps{0};

void dump_from_handler(int) {
  const int saved_errno = errno;
  if (poolalloc_profile_dump("/dev/null") == 0 || errno == EAGAIN) ++g_handler_dumps;
  errno = saved_errno;
}

std::vector<void*> allocate(std::size_t bytes, std::size_t size, void* (*site)(std::size_t)) {
  std::vector<void*> blocks(bytes / size);
  for (void*& block : blocks) {
    block = site(size);
    std::memset(block, 1, 8);
  }
  return blocks;
}

void release(std::vector<void*>& blocks) {
  for (void* block : blocks) std::free(block);
  blocks.clear();
}

// Two threads that allocate and free until `stop`.
struct Churners {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  Churners() {
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([this] {
        while (!stop.load()) {
          std::vector<void*> blocks = allocate(kMiB, 256, probe_churn_site);
          release(blocks);
        }
      });
  }
  ~Churners() {
    stop = true;
    for (std::thread& thread : threads) thread.join();
  }
};

void free_from_other_threads(std::vector<void*>& blocks) {
  std::vector<std::thread> freers;
  for (std::size_t t = 0; t < 4; ++t)
    freers.emplace_back([&blocks, t] {
      for (std::size_t i = t; i < blocks.size(); i += 4) std::free(blocks[i]);
    });
  for (std::thread& thread : freers) thread.join();
  blocks.clear();
}

int fork_while_dumping() {
  Churners churners;
  std::atomic<bool> stop{false};
  std::atomic<int> failed_dumps{0};
  const std::string path = "dump-loop.pb";
  std::thread dumper([&] {
    while (!stop.load())
      if (poolalloc_profile_dump(path.c_str()) != 0 && errno != EAGAIN) ++failed_dumps;
  });
  int failed_children = 0;
  for (int i = 0; i < 40; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      std::vector<void*> blocks = allocate(4 * kMiB, 64, probe_live_site);
      const std::string own = "child-" + std::to_string(i) + ".pb";
      _exit(poolalloc_profile_dump(own.c_str()) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed_children;
  }
  stop = true;
  dumper.join();
  std::printf("failed children %d, failed dumps %d\n", failed_children, failed_dumps.load());
  return failed_children == 0 && failed_dumps == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "live") {
    std::vector<void*> blocks = allocate(64 * kMiB, 64, probe_live_site);
    return 0;
  }
  if (mode == "every") {
    for (int round = 0; round < 8; ++round) {
      std::vector<void*> blocks = allocate(8 * kMiB, 1024, probe_churn_site);
      release(blocks);
    }
    return 0;
  }
  if (mode == "peak") {
    std::vector<void*> blocks = allocate(64 * kMiB, 64, probe_live_site);
    release(blocks);
    blocks = allocate(8 * kMiB, 64, probe_after_peak);
    return 0;
  }
  if (mode == "peak-threads") {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back(
          [] { std::vector<void*> blocks = allocate(16 * kMiB, 64, probe_live_site); });
    for (std::thread& thread : threads) thread.join();
    return 0;
  }
  if (mode == "signal") {
    Churners churners;
    for (int i = 0; i < 20; ++i) {
      std::vector<void*> blocks = allocate(kMiB, 64, probe_live_site);
      raise(SIGUSR2);
    }
    return 0;
  }
  if (mode == "fork") return fork_while_dumping();
  if (mode == "api-tagged") {
    poolalloc_profile_sample(512 * 1024);
    poolalloc_tag_push(poolalloc_tag_register("AI"));
    std::vector<void*> ai = allocate(32 * kMiB, 64, probe_live_site);
    poolalloc_tag_pop();
    std::vector<void*> untagged = allocate(32 * kMiB, 64, probe_after_peak);
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-threads-first") {
    poolalloc_profile_sample(512 * 1024);
    std::vector<void*> blocks(8);
    std::vector<std::thread> threads;
    for (void*& block : blocks)
      threads.emplace_back([&block] { block = probe_live_site(64 * kMiB); });
    for (std::thread& thread : threads) thread.join();
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-fork-frees" || mode == "api-fork-free-null") {
    poolalloc_profile_sample(64 * 1024);
    {
      Churners churners;
      std::atomic<bool> stop{false};
      std::thread null_freer([&stop, &mode] {
        while (mode == "api-fork-free-null" && !stop.load()) std::free(nullptr);
      });
      for (int i = 0; i < 40; ++i) {
        const pid_t child = fork();
        if (child == 0) _exit(0);
        waitpid(child, nullptr, 0);
      }
      stop = true;
      null_freer.join();
    }
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-new") {
    poolalloc_profile_sample(16 * 1024);  // 1,024 samples a site: a spread of 3 %
    std::vector<void*> objects = allocate(16 * kMiB, 64, probe_new_site);
    std::vector<void*> arrays = allocate(16 * kMiB, 64, probe_new_array_site);
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-signal-dumps") {
    poolalloc_profile_sample(1);
    std::signal(SIGPROF, dump_from_handler);
    itimerval every{{0, 100}, {0, 100}};
    setitimer(ITIMER_PROF, &every, nullptr);
    for (int i = 0; i < 400000; ++i) std::free(probe_churn_site(64));
    every = {};
    setitimer(ITIMER_PROF, &every, nullptr);
    std::printf("%d dumps from the handler\n", g_handler_dumps.load());
    return g_handler_dumps.load() > 0 ? 0 : 1;
  }
  if (mode == "api-own") {
    poolalloc_profile_sample(1);
    std::thread([] {
      std::vector<void*> blocks = allocate(kMiB, 64, probe_churn_site);
      release(blocks);
    }).join();
    void* zeroed = std::calloc(1, 64);
    const int dumped = poolalloc_profile_dump("call.pb");
    std::free(zeroed);
    return dumped == 0 ? 0 : 1;
  }
  if (mode == "api-late-worker") {
    std::atomic<int> phase{0};  // 1: the worker looped; 2: sampling is on
    std::thread worker([&phase] {
      const auto pairs = [](std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) std::free(probe_churn_site(64));
      };
      pairs(1000);
      phase = 1;
      while (phase.load() != 2) {
      }
      pairs(kMiB);
    });
    while (phase.load() != 1) {
    }
    poolalloc_profile_sample(64 * 1024);
    phase = 2;
    worker.join();
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-realloc-fail") {
    poolalloc_profile_sample(1);
    std::vector<void*> blocks = allocate(16 * kMiB, kMiB, probe_live_site);
    for (void* block : blocks) {
      errno = 0;
      // More than the address space holds: glibc fails with ENOMEM, and the block stays.
      void* resized = std::realloc(block, std::size_t{1} << 62);
      if (resized != nullptr || errno != ENOMEM) return 1;
    }
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode == "api-exact") {
    std::vector<void*> blocks = allocate(100 * 1000, 100, probe_live_site);
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  if (mode.rfind("api-", 0) == 0) {
    poolalloc_profile_sample(mode == "api-off" ? 0 : 512 * 1024);
    std::vector<void*> blocks = allocate(32 * kMiB, 64, probe_live_site);
    if (mode == "api-freed") free_from_other_threads(blocks);
    return poolalloc_profile_dump("call.pb") == 0 ? 0 : 1;
  }
  std::fprintf(stderr,
               "usage: profile_probe live|every|peak|signal|fork|api-live|api-freed|api-off\n");
  return 1;
}
