// A program whose allocation sites are known exactly, for the heap profile's accuracy test
// (check_accuracy.py) and its comparison with jemalloc's prof (docs/benchmarks.md):
//   site_live_48_bytes     LIVE_48 MiB live in blocks of 48 bytes
//   site_live_4_kib        LIVE_4K MiB live in blocks of 4 KiB
//   site_churned           CHURNED MiB allocated and freed at once, in blocks of 256 bytes
// then a dump (FIRST), then site_leaked_between_dumps allocates LEAK MiB in blocks of 1 KiB and
// keeps them, then a second dump (SECOND). Each function's own call is the site, so each is
// kept out of line.
//
//   known_sites LIVE_48 LIVE_4K CHURNED LEAK FIRST SECOND
//
// The dumps are asked of whichever allocator is preloaded: poolalloc_profile_dump, or jemalloc's
// mallctl("prof.dump"); the program exits with 2 when neither is there or a dump fails.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__attribute__((noinline)) void* site_live_48_bytes() {
  return std::malloc(48);
}
__attribute__((noinline)) void* site_live_4_kib() {
  return std::malloc(4096);
}
__attribute__((noinline)) void* site_churned() {
  return std::malloc(256);
}
__attribute__((noinline)) void* site_leaked_between_dumps() {
  return std::malloc(1024);
}

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// What the sites keep: an array per site, allocated at once before them (keep_room, a site of
// its own in the profile).
struct Kept {
  void** blocks = nullptr;
  std::size_t count = 0;
};

Kept keep_room(std::size_t count) {
  Kept kept;
  kept.blocks = static_cast<void**>(std::calloc(count + 1, sizeof(void*)));
  return kept;
}

template <class Site>
__attribute__((noinline)) void fill(Kept& kept, std::size_t count, Site site) {
  for (std::size_t i = 0; i < count; ++i) {
    kept.blocks[kept.count++] = site();
    static_cast<char*>(kept.blocks[kept.count - 1])[0] = 1;
  }
}

__attribute__((noinline)) void churn(std::size_t count) {
  void* batch[64];
  for (std::size_t i = 0; i < count; i += 64) {
    for (void*& block : batch) block = site_churned();
    for (void* block : batch) std::free(block);
  }
}

bool dump(const char* path) {
  using PoolallocDump = int (*)(const char*);
  using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  if (auto* dump = reinterpret_cast<PoolallocDump>(dlsym(RTLD_DEFAULT, "poolalloc_profile_dump")))
    return dump(path) == 0;
  if (auto* mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"))) {
    const char* name = path;
    return mallctl("prof.dump", nullptr, nullptr, &name, sizeof name) == 0;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s LIVE_48 LIVE_4K CHURNED LEAK FIRST SECOND (MiB, paths)\n",
                 argv[0]);
    return 1;
  }
  const std::size_t live_48 = std::strtoull(argv[1], nullptr, 10) * kMiB / 48;
  const std::size_t live_4k = std::strtoull(argv[2], nullptr, 10) * kMiB / 4096;
  const std::size_t churned = std::strtoull(argv[3], nullptr, 10) * kMiB / 256;
  const std::size_t leaked = std::strtoull(argv[4], nullptr, 10) * kMiB / 1024;
  Kept small = keep_room(live_48), pages = keep_room(live_4k), leaks = keep_room(leaked);
  fill(small, live_48, site_live_48_bytes);
  fill(pages, live_4k, site_live_4_kib);
  churn(churned);
  if (!dump(argv[5])) return 2;
  fill(leaks, leaked, site_leaked_between_dumps);
  if (!dump(argv[6])) return 2;
  return 0;
}
