// Does RSS come down after a peak, whatever the program does next? Two patterns, then the
// resident set (MiB) sampled at 0.5, 1, 2, 4 and 8 s after the peak, printed on one line after
// the resident set at the peak (scripts/rss-over-time.sh; tests/malloc/thread_pool_rss_test).
//
// --pattern=burst: --mib MiB of blocks of --block bytes (64 by default) allocated, written, and
//   freed in random order; then, until the last sample, --after=
//     fast:  1000 blocks of 64 to 127 bytes allocated and freed every 10 ms (a thread cache's
//            fast path serves them all);
//     one:   one call a second (a malloc, a second later its free);
//     frees: frees only: 1000 blocks kept from before the peak, freed one every 2 ms;
//     none:  no call at all.
//   With --threads=2, a second thread of the program (a malloc and a free of its own, then it
//   waits, as a game's audio thread would) lives from before the burst to the end: the program
//   runs threads, as most programs that allocate much do.
// --pattern=pool: --workers threads, each runs one job in turn (about 800 KiB of blocks of 16 B
//   to 8 KiB allocated and written, then all freed in random order; with --job=small, 50 blocks
//   of 16 B to 4 KiB) and then waits on a condition variable; the peak is the end of the last
//   job, and the main thread makes no call afterwards.
// Not part of the timed suite: its output depends on the allocator.
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.hpp"

namespace {

// Read with open/read, which allocate nothing: sampling must not be a call to the allocator.
double resident_mib() {
  char text[128] = {};
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  const char* field = std::strchr(text, ' ');
  return field == nullptr ? -1 : std::strtod(field + 1, nullptr) * 4096 / (1024 * 1024);
}

double now_s() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void sleep_until(double when) {
  const double left = when - now_s();
  if (left <= 0) return;
  const timespec pause{static_cast<time_t>(left),
                       static_cast<long>((left - static_cast<long>(left)) * 1e9)};
  nanosleep(&pause, nullptr);
}

// Pointer arrays outside the allocator, so that they do not blur what is measured.
void** map_pointers(std::size_t count) {
  void* m = mmap(nullptr, count * sizeof(void*), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) std::exit(1);
  return static_cast<void**>(m);
}

void shuffle(void** blocks, std::size_t count, wl::Rng& rng) {
  for (std::size_t i = count; i > 1; --i) {
    void** other = &blocks[rng.below(i)];
    void* swap = blocks[i - 1];
    blocks[i - 1] = *other;
    *other = swap;
  }
}

constexpr double kSamples[] = {0.5, 1, 2, 4, 8};

// --- pool ---

struct Pool {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
  long turn = 0;      // the worker whose job runs; a worker whose job is done waits for -1
  long finished = 0;  // jobs done
};
Pool g_pool;
bool g_small_jobs = false;  // --job=small

struct Worker {
  pthread_t thread;
  long index;
};

void run_job(long index) {
  wl::Rng rng(static_cast<std::uint64_t>(index) + 1);
  constexpr std::size_t kMost = 4096;
  void** blocks = map_pointers(kMost);
  const std::size_t most_blocks = g_small_jobs ? 50 : kMost;
  const unsigned doublings = g_small_jobs ? 8 : 9;  // 16 B .. 4 KiB or 8 KiB
  std::size_t count = 0;
  for (std::size_t bytes = 0; bytes < 800 * 1024 && count < most_blocks;) {
    const unsigned doubling = 4 + static_cast<unsigned>(rng.below(doublings));
    const std::size_t size =
        (std::size_t{1} << doubling) + rng.below((std::size_t{1} << doubling) + 1);
    blocks[count] = std::malloc(size);
    std::memset(blocks[count++], 0x5a, size);
    bytes += size;
  }
  shuffle(blocks, count, rng);
  for (std::size_t i = 0; i < count; ++i) std::free(blocks[i]);
  munmap(blocks, kMost * sizeof(void*));
}

void* work(void* arg) {
  const long index = static_cast<Worker*>(arg)->index;
  pthread_mutex_lock(&g_pool.mutex);
  while (g_pool.turn != index) pthread_cond_wait(&g_pool.turn_changed, &g_pool.mutex);
  pthread_mutex_unlock(&g_pool.mutex);
  run_job(index);
  pthread_mutex_lock(&g_pool.mutex);
  ++g_pool.finished;
  ++g_pool.turn;
  pthread_cond_broadcast(&g_pool.turn_changed);
  while (g_pool.turn != -1) pthread_cond_wait(&g_pool.turn_changed, &g_pool.mutex);
  pthread_mutex_unlock(&g_pool.mutex);
  return nullptr;
}

double run_pool(long workers, Worker* pool) {
  for (long i = 0; i < workers; ++i) {
    pool[i].index = i;
    if (pthread_create(&pool[i].thread, nullptr, work, &pool[i]) != 0) std::exit(1);
  }
  pthread_mutex_lock(&g_pool.mutex);
  while (g_pool.finished != workers) pthread_cond_wait(&g_pool.turn_changed, &g_pool.mutex);
  pthread_mutex_unlock(&g_pool.mutex);
  return now_s();
}

// --- burst ---

double run_burst(long mib, long block, const std::string& after, void** kept) {
  const std::size_t count = (static_cast<std::size_t>(mib) << 20) / static_cast<std::size_t>(block);
  void** blocks = map_pointers(count);
  for (std::size_t i = 0; i < 1000; ++i) kept[i] = after == "frees" ? std::malloc(64) : nullptr;
  for (std::size_t i = 0; i < count; ++i) {
    blocks[i] = std::malloc(static_cast<std::size_t>(block));
    *static_cast<std::size_t*>(blocks[i]) = i;
  }
  wl::Rng rng(4);
  shuffle(blocks, count, rng);
  for (std::size_t i = 0; i < count; ++i) std::free(blocks[i]);
  munmap(blocks, count * sizeof(void*));
  return now_s();
}

// What the program does after the burst, until `until`; called once per sample, it goes on
// where the previous call stopped.
void after_burst(const std::string& after, void** kept, double until) {
  if (after == "fast") {
    void* blocks[1000];
    while (now_s() < until) {
      for (std::size_t i = 0; i < 1000; ++i) {
        blocks[i] = std::malloc(64 + i % 64);
        *static_cast<std::size_t*>(blocks[i]) = i;
      }
      for (void* block : blocks) std::free(block);
      sleep_until(now_s() + 0.01);
    }
  } else if (after == "one") {
    static void* block = nullptr;
    static double next = now_s();
    for (; next < until; next += 1) {
      sleep_until(next);
      if (block == nullptr) {
        block = std::malloc(64);
      } else {
        std::free(block);
        block = nullptr;
      }
    }
  } else if (after == "frees") {
    static std::size_t freed = 0;
    for (; freed < 1000 && now_s() < until; ++freed) {
      std::free(kept[freed]);
      sleep_until(now_s() + 0.002);
    }
  }
}

}  // namespace

// The second thread of --threads=2: it never ends (the process does).
void* wait_forever(void*) {
  std::free(std::malloc(64));
  for (;;) pause();
}

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  std::string pattern = "burst", after = "none";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pattern=", 10) == 0) pattern = argv[i] + 10;
    if (std::strncmp(argv[i], "--after=", 8) == 0) after = argv[i] + 8;
    if (std::strcmp(argv[i], "--job=small") == 0) g_small_jobs = true;
  }
  if (pattern == "burst" && args.get("threads", 1, 1, 1) == 2) {
    pthread_t companion;
    pthread_create(&companion, nullptr, wait_forever, nullptr);
  }
  const long samples = args.get("samples", 5, 5, 5);  // how many of kSamples
  void** kept = map_pointers(1000);
  Worker* pool = nullptr;
  double peak_at = 0;
  if (pattern == "pool") {
    const long workers = args.get("workers", 8, 256, 256);
    pool = static_cast<Worker*>(static_cast<void*>(map_pointers(workers * 2)));
    peak_at = run_pool(workers, pool);
  } else {
    peak_at = run_burst(args.get("mib", 16, 256, 256), args.get("block", 64, 64, 64), after, kept);
  }
  double rss[5] = {};
  const double peak = resident_mib();
  for (long s = 0; s < samples && s < 5; ++s) {
    if (pattern == "burst") after_burst(after, kept, peak_at + kSamples[s]);
    sleep_until(peak_at + kSamples[s]);
    rss[s] = resident_mib();
  }
  std::printf("%.1f", peak);
  for (long s = 0; s < samples && s < 5; ++s) std::printf(" %.1f", rss[s]);
  std::printf("\n");
  if (pool != nullptr) {
    const long workers = args.get("workers", 8, 256, 256);
    pthread_mutex_lock(&g_pool.mutex);
    g_pool.turn = -1;
    pthread_cond_broadcast(&g_pool.turn_changed);
    pthread_mutex_unlock(&g_pool.mutex);
    for (long i = 0; i < workers; ++i) pthread_join(pool[i].thread, nullptr);
  }
}
