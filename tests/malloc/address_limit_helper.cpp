// A program that address_limit_test runs under an address-space limit (RLIMIT_AS, ulimit -v)
// set before it starts, or that it lowers itself. Linked with libpoolalloc.so, so the allocator
// initialises before main, under the limit. Each mode prints what failed on stderr and exits 1,
// or exits 0.
//
//   address_limit_helper large MIB     malloc(MIB MiB) is written; small requests still pooled
//   address_limit_helper lowered       after start-up, RLIMIT_AS lowered to 200 MiB, 8 threads
//   address_limit_helper tight         RLIMIT_AS lowered to just above what is in use
//   address_limit_helper blocked       another mapping right after the region's mapped end
//   address_limit_helper fork          fork after the region grew; the child grows it further
//   address_limit_helper race          threads grow the region while others check ownership
//   address_limit_helper vmas          the region stays a few VMAs while it grows
#include <poolalloc/poolalloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "malloc_test_util.hpp"

namespace {

int g_failures = 0;

void fail(const char* what) {
  if (++g_failures <= 10) std::fprintf(stderr, "FAIL: %s\n", what);  // a loop may fail often
}
#define CHECK(condition)                \
  do {                                  \
    if (!(condition)) fail(#condition); \
  } while (false)

// A field of /proc/self/status in KiB (VmSize, VmPeak).
std::size_t status_kib(const char* field) {
  FILE* file = std::fopen("/proc/self/status", "r");
  if (file == nullptr) return 0;
  char line[256];
  std::size_t value = 0;
  const std::size_t length = std::strlen(field);
  while (std::fgets(line, sizeof line, file) != nullptr) {
    if (std::strncmp(line, field, length) == 0 && line[length] == ':')
      value = std::strtoull(line + length + 1, nullptr, 10);
  }
  std::fclose(file);
  return value;
}

// The mapping of /proc/self/maps holding p: [start, end); false if none.
bool mapping_of(const void* p, std::uintptr_t& start, std::uintptr_t& end) {
  FILE* file = std::fopen("/proc/self/maps", "r");
  if (file == nullptr) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  char line[512];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, file) != nullptr) {
    std::uintptr_t from = 0;
    std::uintptr_t to = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &from, &to) == 2 && from <= address &&
        address < to) {
      start = from;
      end = to;
      found = true;
    }
  }
  std::fclose(file);
  return found;
}

void set_address_limit(std::size_t bytes) {
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur = bytes;
  if (setrlimit(RLIMIT_AS, &limit) != 0) fail("setrlimit");
}

// Allocates `count` blocks of `size` bytes, keeping them; returns how many were pooled.
std::size_t allocate_many(std::vector<void*>& blocks, std::size_t count, std::size_t size) {
  std::size_t pooled = 0;
  for (std::size_t i = 0; i < count; ++i) {
    void* p = std::malloc(size);
    if (p == nullptr) break;
    std::memset(p, 0x5a, 16);
    pooled += poolalloc_owns(p) != 0;
    blocks.push_back(p);
  }
  return pooled;
}

void free_all(std::vector<void*>& blocks) {
  for (void* p : blocks) std::free(p);
  blocks.clear();
}

// malloc(mib MiB) succeeds and can be written; small requests are served by the pools.
int large(std::size_t mib) {
  void* small = std::malloc(48);
  CHECK(small != nullptr && poolalloc_owns(small) == 1);
  const std::size_t bytes = mib << 20;
  auto* big = static_cast<unsigned char*>(std::malloc(malloc_test::opaque(bytes)));
  if (big == nullptr) {
    std::fprintf(stderr, "FAIL: malloc(%zu MiB): %s (VmSize %zu KiB)\n", mib, std::strerror(errno),
                 status_kib("VmSize"));
    return 1;
  }
  std::memset(big, 0xab, bytes);
  CHECK(big[0] == 0xab && big[bytes - 1] == 0xab);
  std::free(big);
  std::vector<void*> blocks;
  CHECK(allocate_many(blocks, 1000, 100) == 1000);
  free_all(blocks);
  std::free(small);
  return g_failures == 0 ? 0 : 1;
}

// glibc's tst-malloc-thread-fail, in short: pooled blocks live, RLIMIT_AS lowered to 200 MiB,
// then 8 threads that allocate and free a mix of sizes, large ones among them. Run with glibc's
// arenas limited to one (GLIBC_TUNABLES=glibc.malloc.arena_max=1): each further arena of glibc
// takes 64 MiB of address space, and whether a thread gets one is a race; this test is about
// the pools' share.
int lowered() {
  std::vector<void*> live;
  CHECK(allocate_many(live, 10000, 64) == 10000);
  set_address_limit(std::size_t{200} << 20);
  constexpr int kThreads = 8;
  std::atomic<int> failed_allocations{0};
  std::atomic<int> pooled{0};
  std::vector<pthread_t> threads(kThreads);
  auto body = +[](void* data) -> void* {
    auto& counters = *static_cast<std::pair<std::atomic<int>*, std::atomic<int>*>*>(data);
    static constexpr std::size_t kSizes[] = {16, 100, 1000, 4096, 30000, 200000, 1 << 20, 4 << 20};
    for (int round = 0; round < 200; ++round) {
      void* blocks[std::size(kSizes)];
      for (std::size_t i = 0; i < std::size(kSizes); ++i) {
        blocks[i] = std::malloc(malloc_test::opaque(kSizes[i]));
        if (blocks[i] == nullptr) {
          counters.first->fetch_add(1);
          continue;
        }
        std::memset(blocks[i], round, kSizes[i]);
        if (kSizes[i] <= 30000 && poolalloc_owns(blocks[i]) != 0) counters.second->fetch_add(1);
      }
      for (void* p : blocks) std::free(p);
    }
    return nullptr;
  };
  std::pair<std::atomic<int>*, std::atomic<int>*> counters{&failed_allocations, &pooled};
  int created = 0;
  for (pthread_t& thread : threads) {
    const int error = pthread_create(&thread, nullptr, body, &counters);
    if (error != 0) {
      std::fprintf(stderr, "FAIL: pthread_create: %s (VmSize %zu KiB)\n", std::strerror(error),
                   status_kib("VmSize"));
      ++g_failures;
      break;
    }
    ++created;
  }
  for (int i = 0; i < created; ++i) pthread_join(threads[i], nullptr);
  if (failed_allocations != 0) {
    std::fprintf(stderr, "FAIL: %d allocations failed (VmPeak %zu KiB)\n",
                 failed_allocations.load(), status_kib("VmPeak"));
    ++g_failures;
  }
  CHECK(pooled == created * 200 * 5);
  free_all(live);
  return g_failures == 0 ? 0 : 1;
}

// RLIMIT_AS lowered to just above what the process uses: small requests are served until the
// address space is exhausted, then fail with ENOMEM, nothing breaks; once the limit is raised
// again, the pools grow again.
int tight() {
  std::vector<void*> blocks;
  CHECK(allocate_many(blocks, 100, 64) == 100);
  const std::size_t used = status_kib("VmSize") << 10;
  set_address_limit(used + (std::size_t{3} << 20));
  std::size_t count = 0;
  std::size_t pooled = 0;
  for (;; ++count) {
    errno = 0;
    void* p = std::malloc(1000);
    if (p == nullptr) {
      CHECK(errno == ENOMEM);
      break;
    }
    pooled += poolalloc_owns(p) != 0;
    blocks.push_back(p);
    if (count > 1000000) {
      fail("malloc never failed under the lowered limit");
      break;
    }
  }
  CHECK(pooled > 1000);  // the pools grew into the margin
  // free and malloc keep working at the edge.
  for (std::size_t i = blocks.size() / 2; i < blocks.size(); ++i) std::free(blocks[i]);
  blocks.resize(blocks.size() / 2);
  for (int i = 0; i < 1000; ++i) {
    void* p = std::malloc(1000);
    CHECK(p != nullptr);
    blocks.push_back(p);
  }
  // With the limit raised, the pools grow again once the growth back-off (at most 4096
  // requests that find no span) has passed, and from then on serve every request.
  set_address_limit(RLIM_INFINITY);
  std::size_t last_not_pooled = 0;
  for (std::size_t i = 1; i <= 30000; ++i) {
    void* p = std::malloc(1000);
    CHECK(p != nullptr);
    if (poolalloc_owns(p) == 0) last_not_pooled = i;
    blocks.push_back(p);
  }
  if (last_not_pooled > 5000) std::fprintf(stderr, "not pooled: request %zu\n", last_not_pooled);
  CHECK(last_not_pooled <= 5000);
  free_all(blocks);
  return g_failures == 0 ? 0 : 1;
}

// Another mapping placed with MAP_FIXED right after the region's mapped end: the region stops
// growing, requests go to the system allocator, the other mapping is never taken for ours, and
// once it is gone the region grows again.
int blocked() {
  std::vector<void*> blocks;
  CHECK(allocate_many(blocks, 10, 4096) == 10);
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  if (!mapping_of(blocks[0], start, end)) {
    fail("no mapping holds a pooled block");
    return 1;
  }
  constexpr std::size_t kBlocker = std::size_t{4} << 20;
  void* blocker = mmap(reinterpret_cast<void*>(end), kBlocker, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  CHECK(blocker == reinterpret_cast<void*>(end));
  std::memset(blocker, 0x11, kBlocker);
  const std::size_t pooled = allocate_many(blocks, 20000, 4096);  // 80 MiB: past the end
  CHECK(blocks.size() == 20010);
  CHECK(pooled < 20000);
  for (void* p : blocks) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    if (address >= end && address < end + kBlocker) fail("a block inside the other mapping");
    if (poolalloc_owns(p) != 0 && address >= end) fail("a pooled block past the region's end");
  }
  for (std::size_t offset = 0; offset < kBlocker; offset += 4096)
    CHECK(poolalloc_owns(static_cast<char*>(blocker) + offset) == 0);
  // free() of the other mapping's memory would go to glibc; realloc likewise: not tried here.
  free_all(blocks);
  CHECK(static_cast<unsigned char*>(blocker)[kBlocker - 1] == 0x11);
  munmap(blocker, kBlocker);
  // The range is free again: the region grows into it once the back-off has passed.
  bool grown = false;
  for (int i = 0; i < 100000 && !grown; ++i) {
    void* p = std::malloc(4096);
    CHECK(p != nullptr);
    blocks.push_back(p);
    grown = poolalloc_owns(p) != 0 && reinterpret_cast<std::uintptr_t>(p) >= end;
  }
  CHECK(grown);
  free_all(blocks);
  return g_failures == 0 ? 0 : 1;
}

// fork() after the region grew: the child sees the same region, frees the parent's blocks and
// grows the region further; the parent is unaffected.
int fork_after_growth() {
  std::vector<void*> blocks;
  CHECK(allocate_many(blocks, 30000, 1024) == 30000);  // about 30 MiB: many growth steps
  const pid_t child = fork();
  if (child == 0) {
    for (void* p : blocks) {
      if (poolalloc_owns(p) != 1 || static_cast<unsigned char*>(p)[0] != 0x5a) _exit(2);
    }
    free_all(blocks);
    if (allocate_many(blocks, 60000, 1024) != 60000) _exit(3);
    free_all(blocks);
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(allocate_many(blocks, 30000, 1024) == 30000);
  for (void* p : blocks) CHECK(static_cast<unsigned char*>(p)[0] == 0x5a);
  free_all(blocks);
  return g_failures == 0 ? 0 : 1;
}

// Threads grow the region as fast as they can and hand every block, through a locked queue, to
// checker threads that must find each one pooled and free it; a foreign block is never ours.
int race() {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 2;
  constexpr int kBlocksEach = 40000;
  std::mutex lock;
  std::vector<void*> queue;
  std::atomic<int> producers_left{kProducers};
  std::atomic<int> not_owned{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kProducers; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBlocksEach; ++i) {
        void* p = std::malloc(malloc_test::opaque(std::size_t(512 + 1024 * t)));
        if (p == nullptr || poolalloc_owns(p) != 1) ++not_owned;
        std::lock_guard guard(lock);
        queue.push_back(p);
      }
      --producers_left;
    });
  }
  for (int t = 0; t < kConsumers; ++t) {
    threads.emplace_back([&] {
      void* foreign = std::malloc(malloc_test::opaque(std::size_t{1} << 20));
      for (;;) {
        std::vector<void*> taken;
        {
          std::lock_guard guard(lock);
          taken.swap(queue);
        }
        for (void* p : taken) {
          if (poolalloc_owns(p) != 1) ++not_owned;
          std::free(p);
        }
        if (poolalloc_owns(foreign) != 0) ++not_owned;
        if (taken.empty() && producers_left == 0) {
          std::lock_guard guard(lock);
          if (queue.empty()) break;
        }
      }
      std::free(foreign);
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(not_owned == 0);
  return g_failures == 0 ? 0 : 1;
}

// The region's mapping stays one VMA however many steps it grows by (vm.max_map_count).
int vmas() {
  std::vector<void*> blocks;
  allocate_many(blocks, 10, 32768);
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  CHECK(mapping_of(blocks[0], start, end));
  CHECK(allocate_many(blocks, 8000, 32768) == 8000);  // 250 MiB: 125 growth steps
  std::uintptr_t grown_start = 0;
  std::uintptr_t grown_end = 0;
  CHECK(mapping_of(blocks.back(), grown_start, grown_end));
  CHECK(grown_start == start);
  CHECK(grown_end - grown_start >= std::size_t{250} << 20);
  free_all(blocks);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string_view mode = argv[1];
  if (mode == "large" && argc == 3) return large(std::strtoull(argv[2], nullptr, 10));
  if (mode == "lowered") return lowered();
  if (mode == "tight") return tight();
  if (mode == "blocked") return blocked();
  if (mode == "fork") return fork_after_growth();
  if (mode == "race") return race();
  if (mode == "vmas") return vmas();
  if (mode == "status") {
    std::printf("VmSize %zu kB, VmPeak %zu kB\n", status_kib("VmSize"), status_kib("VmPeak"));
    return 0;
  }
  return 2;
}
