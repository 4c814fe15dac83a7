#include "system_forwarding.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "large_blocks.hpp"
#include "os.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// glibc's own definition of `name`. Not dlsym(RTLD_NEXT): the next definition after ours can
// be another allocator's (redis-server links jemalloc), which knows nothing of glibc's blocks.
template <class Function>
Function glibc_function(std::atomic<Function>& cached, const char* name) {
  Function function = cached.load(std::memory_order_acquire);
  if (function == nullptr) {
    const OwnAllocationsScope own;  // what dlopen allocates is not the program's
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (libc == nullptr) return nullptr;
    function = reinterpret_cast<Function>(dlsym(libc, name));
    dlclose(libc);
    cached.store(function, std::memory_order_release);
  }
  return function;
}

// The largest request for which poolalloc raises the mmap threshold: the largest the large-block
// cache serves (large_blocks.hpp), where glibc's own rule goes up to 32 MiB
// (DEFAULT_MMAP_THRESHOLD_MAX). A heap keeps free space at its top up to the trim threshold,
// twice the mmap threshold, for as long as the process lives, and a thread's request is served
// from its own arena: four threads that each freed a 24 MiB buffer left three heaps of 24 MiB
// resident with nothing live in them (the first buffer, mapped before the threshold rose, was
// unmapped). Beyond it (and the page that its chunk rounds up to), a block is mapped at its
// malloc and unmapped at its free, as glibc does beyond 32 MiB, and no heap keeps more free at
// its top than the trim threshold of 4 MiB and a page: 8 MiB and 8 KiB.
constexpr std::size_t kLargestHeapRequest = kLargestCachedRequest;
// glibc's starting mmap threshold (DEFAULT_MMAP_THRESHOLD_MIN).
constexpr std::size_t kMinMmapThreshold = std::size_t{128} << 10;
// The least free space at the top of a glibc heap that glibc keeps rather than hands back.
constexpr std::size_t kMinTrimThreshold = std::size_t{8} << 20;
// glibc's defaults of the two thresholds that poolalloc sets (DEFAULT_MMAP_THRESHOLD and
// DEFAULT_TRIM_THRESHOLD).
constexpr int kDefaultThreshold = 128 << 10;

// mallopt's parameters that turn glibc's dynamic thresholds off, and the value the program gave
// each (kUnset while it gave none). The program set one (maybe from a constructor that ran
// before start-up): they are its own from then on.
constexpr int kThresholdParams[] = {M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX};
constexpr int kUnset = INT32_MIN;
constinit std::atomic<int> g_program_thresholds[std::size(kThresholdParams)] = {kUnset, kUnset,
                                                                                kUnset, kUnset};
constinit std::atomic<bool> g_program_sets_thresholds{false};
// poolalloc set glibc's thresholds at start-up.
constinit std::atomic<bool> g_took_over_thresholds{false};

// glibc's thresholds as a program of glibc alone that made the same mallopt calls would have
// them: its own values, and glibc's defaults in place of poolalloc's.
void apply_program_thresholds() {
  for (std::size_t i = 0; i < std::size(kThresholdParams); ++i) {
    const int param = kThresholdParams[i];
    const int value = g_program_thresholds[i].load(std::memory_order_acquire);
    if (value != kUnset) {
      __libc_mallopt(param, value);
    } else if (param == M_MMAP_THRESHOLD || param == M_TRIM_THRESHOLD) {
      __libc_mallopt(param, kDefaultThreshold);
    }
  }
}

// After poolalloc applied thresholds of its own: if the program set one meanwhile, from another
// thread, its values are applied again over poolalloc's. The program's mallopt records its
// value before it raises the flag, so the values read here are at least those of the calls
// that raised it.
void yield_thresholds_to_the_program() {
  if (!g_program_sets_thresholds.load(std::memory_order_acquire)) return;
  g_system_mmap_threshold.store(SIZE_MAX, std::memory_order_relaxed);
  apply_program_thresholds();
}

// The thresholds for requests up to `size` bytes. glibc maps a request whose chunk (the size,
// its header, rounded up to 16) reaches the mmap threshold, and its own rule raises the
// threshold to a whole mapped chunk: a request of the same size then fits under it.
void apply_system_thresholds(std::size_t size) {
  const std::size_t mmap_threshold =
      (size + 2 * sizeof(std::size_t) + kPageSize - 1) & ~(kPageSize - 1);
  __libc_mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold));
  __libc_mallopt(M_TRIM_THRESHOLD,
                 static_cast<int>(std::max(2 * mmap_threshold, kMinTrimThreshold)));
}

// Whether the environment sets one of glibc's thresholds (mallopt's four parameters that turn
// glibc's dynamic thresholds off).
bool environment_sets_thresholds() {
  constexpr std::string_view kVariables[] = {"MALLOC_MMAP_THRESHOLD_=", "MALLOC_TRIM_THRESHOLD_=",
                                             "MALLOC_TOP_PAD_=", "MALLOC_MMAP_MAX_="};
  constexpr std::string_view kTunables[] = {"glibc.malloc.mmap_threshold",
                                            "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                                            "glibc.malloc.mmap_max"};
  if (environ == nullptr) return true;  // cannot tell: leave glibc alone
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    for (std::string_view variable : kVariables) {
      if (text.starts_with(variable)) return true;
    }
    if (!text.starts_with("GLIBC_TUNABLES=")) continue;
    for (std::string_view tunable : kTunables) {
      if (text.find(tunable) != std::string_view::npos) return true;
    }
  }
  return false;
}

}  // namespace

// Why poolalloc sets glibc's thresholds. glibc hands the free space at the top of a heap back
// to the OS once it passes the trim threshold, and its dynamic rule sets that threshold to twice
// the mmap threshold, which starts at 128 KiB and rises to the size of the largest block it
// mapped and unmapped (up to 32 MiB). In a process of glibc alone, small blocks sit all over its
// heaps and keep their tops in use. Behind the pools, glibc serves only blocks over 32 KiB, and
// the top of a heap that holds only those is free each time its last block is: it is handed
// back and faulted in again at the next request. mimalloc-bench's mstress (2 threads, 38 blocks
// of 40 KiB to 800 KiB per round) shrank and regrew the main heap by 1.6 MiB and a thread's heap
// by 3 MiB every round: 30,000 page faults against glibc's 4,000 to 11,000, and 1.7 times
// glibc's time. So poolalloc applies glibc's rule itself, raising the mmap threshold to each
// larger request up to 4 MiB (glibc waits for the block's free, which poolalloc does not see the
// size of), with a trim threshold of at least 8 MiB: as much free top per heap as the pools keep
// of empty spans. mallopt turns glibc's own rule off, which is why poolalloc applies it instead.
void raise_system_thresholds(std::size_t size) {
  if (size > kLargestHeapRequest) return;
  std::size_t current = g_system_mmap_threshold.load(std::memory_order_relaxed);
  do {
    if (size <= current) return;
  } while (
      !g_system_mmap_threshold.compare_exchange_weak(current, size, std::memory_order_relaxed));
  // Two threads that raise it at once may apply their values in either order: the one that
  // finds a larger value in force after its own applies that one again.
  for (std::size_t applied = size;;) {
    apply_system_thresholds(applied);
    const std::size_t now = g_system_mmap_threshold.load(std::memory_order_relaxed);
    if (now == applied || now == SIZE_MAX) break;
    applied = now;
  }
  yield_thresholds_to_the_program();
}

void take_over_system_thresholds() {
  if (g_program_sets_thresholds.load(std::memory_order_acquire) || environment_sets_thresholds())
    return;
  g_took_over_thresholds.store(true, std::memory_order_release);
  apply_system_thresholds(kMinMmapThreshold);
  g_system_mmap_threshold.store(kMinMmapThreshold, std::memory_order_relaxed);
  yield_thresholds_to_the_program();
}

int system_mallopt(int param, int value) {
  const auto* const found =
      std::find(std::begin(kThresholdParams), std::end(kThresholdParams), param);
  if (found == std::end(kThresholdParams)) return __libc_mallopt(param, value);
  g_program_thresholds[found - std::begin(kThresholdParams)].store(value,
                                                                   std::memory_order_release);
  g_program_sets_thresholds.store(true, std::memory_order_release);
  g_system_mmap_threshold.store(SIZE_MAX, std::memory_order_relaxed);
  if (g_took_over_thresholds.load(std::memory_order_acquire)) apply_program_thresholds();
  return __libc_mallopt(param, value);
}

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

void system_malloc_stats() {
  static std::atomic<void (*)()> cached{nullptr};
  auto function = glibc_function(cached, "malloc_stats");
  if (function != nullptr) function();
}

}  // namespace poolalloc::internal
