// Workload 7, latency: how long single allocator calls take in a game's frame loop, and how much
// allocator time a frame spends, the worst cases included. Each frame
//   - allocates OBJECTS objects on average (90 % 16-512 B, 9.5 % 1-16 KiB components, 0.5 %
//     64 KiB-1 MiB buffers; sizes log-uniform), each living 1 to 300 frames, writes them whole,
//     and frees those whose time is up;
//   - grows 8 temporary arrays side by side with realloc from 64 B to 2 KiB, then frees them;
//   - hands 64 job records of 48-248 B to a worker thread (a lock-free ring), which frees them;
// and every LEVEL frames (frame 0 included) a level change frees the whole world and allocates
// a new level of LEVEL_OBJECTS objects of 16-256 B.
//
// Every malloc, realloc and free, the worker's frees included, is timed with the time-stamp
// counter into a log-linear histogram (1.6 % resolution) allocated before the timed part, so
// that recording allocates nothing and takes no lock (the worker has its own histogram). The
// ticks are converted to ns by the counter's rate against CLOCK_MONOTONIC over the run; the
// cost of reading the counter twice (the smallest of many empty measurements) is subtracted, so
// that a call faster than the counter's resolution counts as 0.
//
// stdout: the checksum of the data written (the same under every allocator). --stats=PATH
// writes the figures, one "name value" line each, then the histogram as "hist NS COUNT" lines
// (NS: the middle of the bucket). --slow=PATH lists every call over 10 us (write_slow_calls).
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <thread>
#include <vector>

#include "common.hpp"
#include "waiting.hpp"

namespace {

using Ticks = std::uint64_t;

// lfence before rdtsc: the earlier instructions are done; rdtscp waits for the call to finish.
inline Ticks start_ticks() {
  _mm_lfence();
  return __rdtsc();
}
inline Ticks end_ticks() {
  unsigned aux;
  Ticks t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

double monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Log-linear buckets, as HdrHistogram's: values below 128 exactly, above that 64 buckets per
// power of two (each at most 1/64 of its value wide), up to 2^41 ticks (minutes at any clock):
// 128 exact buckets, then 64 for each of the powers 2^7 to 2^40.
class Histogram {
 public:
  static constexpr int kBuckets = 128 + 64 * (40 - 6);

  Histogram() : counts_(kBuckets) {}  // zeroed, so its pages are touched before the timed part

  void record(Ticks v) {
    counts_[static_cast<std::size_t>(index(v))]++;
    max_ = std::max(max_, v);
  }
  void add(const Histogram& other) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    max_ = std::max(max_, other.max_);
  }
  std::uint64_t count(int bucket) const { return counts_[static_cast<std::size_t>(bucket)]; }
  std::uint64_t total() const {
    std::uint64_t n = 0;
    for (auto c : counts_) n += c;
    return n;
  }
  Ticks max() const { return max_; }
  // The middle of a bucket, in ticks.
  static double middle(int bucket) {
    if (bucket < 128) return bucket;
    int shift = bucket / 64 - 1;
    double low = static_cast<double>(static_cast<Ticks>(bucket % 64 + 64) << shift);
    return low + static_cast<double>(Ticks{1} << shift) / 2;
  }
  // The middle of the bucket that holds the q-quantile (nearest rank).
  double quantile(double q) const {
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total()) + 0.999999);
    std::uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[static_cast<std::size_t>(i)];
      if (seen >= std::max<std::uint64_t>(rank, 1)) return middle(i);
    }
    return static_cast<double>(max_);
  }
  std::uint64_t at_least(Ticks v) const {
    std::uint64_t n = 0;
    for (int i = index(v); i < kBuckets; ++i) n += counts_[static_cast<std::size_t>(i)];
    return n;
  }

 private:
  static int index(Ticks v) {
    if (v < 128) return static_cast<int>(v);
    int top = 63 - __builtin_clzll(v);  // 7 or more
    int shift = top - 6;
    if (top > 40) return kBuckets - 1;
    return 64 * shift + static_cast<int>(v >> shift);
  }

  std::vector<std::uint64_t> counts_;
  Ticks max_ = 0;
};

// A call that took longer than the slow-call threshold, for --slow=PATH: which call, of what
// size, when (ticks since the start) and in which frame.
struct SlowCall {
  char op;  // 'm'alloc, 'r'ealloc, 'f'ree
  std::uint32_t size;
  std::uint32_t frame;
  Ticks at, took;
};

// Times allocator calls: into a histogram per call, and into a running sum (the frame's). Calls
// over `slow` ticks are also logged, into a log reserved before the timed part (the first
// kSlowLog of them).
class Timer {
 public:
  static constexpr std::size_t kSlowLog = 100000;
  Timer(Ticks overhead, Ticks slow) : overhead_(overhead), slow_(slow) {
    slow_calls.reserve(kSlowLog);
  }
  template <typename Call>
  auto operator()(char op, std::size_t size, Call call) {
    Ticks start = start_ticks();
    auto result = call();
    Ticks end = end_ticks();
    Ticks t = end - start > overhead_ ? end - start - overhead_ : 0;
    histogram.record(t);
    sum += t;
    if (t > slow_ && slow_calls.size() < kSlowLog) [[unlikely]]
      slow_calls.push_back({op, static_cast<std::uint32_t>(size), frame, start, t});
    return result;
  }
  Histogram histogram;
  Ticks sum = 0;
  std::uint32_t frame = 0;
  std::vector<SlowCall> slow_calls;

 private:
  Ticks overhead_;
  Ticks slow_;
};

void* timed_malloc(Timer& timer, std::size_t size) {
  void* p = timer('m', size, [&] { return wl::malloc(size); });
  if (!p) std::abort();
  return p;
}
void timed_free(Timer& timer, void* p, std::size_t size) {
  timer('f', size, [&] {
    wl::free(p);
    return 0;
  });
}

// An object of the game: a header, then its bytes, all written.
struct Object {
  Object* next;  // the next object that dies in the same frame, or in the same level
  std::uint32_t size;
  std::uint32_t tag;
};

Object* new_object(Timer& timer, std::size_t size, std::uint32_t tag, Object* next) {
  auto* o = static_cast<Object*>(timed_malloc(timer, size));
  std::memset(o, static_cast<int>(tag & 0xff), size);
  *o = Object{next, static_cast<std::uint32_t>(size), tag};
  return o;
}
// Frees a list of objects, reading each first.
std::uint64_t free_objects(Timer& timer, Object* o) {
  std::uint64_t checksum = 0;
  while (o) {
    Object* next = o->next;
    checksum += o->tag + reinterpret_cast<unsigned char*>(o)[o->size - 1];
    timed_free(timer, o, o->size);
    o = next;
  }
  return checksum;
}

// The jobs handed to the worker: a single-producer single-consumer ring of pointers. The
// counters are 32 bits so that std::atomic's wait and notify use the futex directly on Linux
// (waiting.hpp says what Windows waits with).
class JobRing {
 public:
  static constexpr std::uint32_t kSize = 1024;  // 16 frames' worth of jobs

  void push(void* job) {
    std::uint32_t head = head_.load(std::memory_order_relaxed);
    for (std::uint32_t tail; head - (tail = tail_.load(std::memory_order_acquire)) == kSize;)
      wl::wait(tail_, tail, std::memory_order_acquire);
    slots_[head % kSize] = job;
    head_.store(head + 1, std::memory_order_release);
  }
  // Wakes the worker: once a frame, after its jobs are pushed.
  void publish() { wl::notify_one(head_); }
  // The next job, or nullptr once the producer has pushed nullptr.
  void* pop() {
    std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    for (std::uint32_t head; (head = head_.load(std::memory_order_acquire)) == tail;)
      wl::wait(head_, head, std::memory_order_acquire);
    void* job = slots_[tail % kSize];
    tail_.store(tail + 1, std::memory_order_release);
    wl::notify_one(tail_);
    return job;
  }

 private:
  void* slots_[kSize] = {};
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
};

// The nearest-rank q-quantile of frame times (ticks); sorts them.
double frame_quantile(std::vector<Ticks>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999);
  return static_cast<double>(v[std::clamp<std::size_t>(rank, 1, v.size()) - 1]);
}

// The smallest time of an empty measurement (what reading the counter costs), and the smallest
// step of the counter (AMD's processors advance it in steps of about 10 ns, Intel's by one).
std::pair<Ticks, Ticks> timer_overhead_and_resolution() {
  Ticks overhead = ~Ticks{0}, resolution = ~Ticks{0};
  for (int i = 0; i < 10000; ++i) {
    Ticks start = start_ticks();
    overhead = std::min(overhead, end_ticks() - start);
    Ticks a = __rdtsc(), b = __rdtsc();
    if (b > a) resolution = std::min(resolution, b - a);
  }
  return {overhead, resolution};
}

// The counter's rate, roughly (over 20 ms), before the run: for the slow-call threshold.
double rough_ns_per_tick() {
  const double start_ns = monotonic_ns();
  const Ticks start = __rdtsc();
  while (monotonic_ns() - start_ns < 20e6) {
  }
  return (monotonic_ns() - start_ns) / static_cast<double>(__rdtsc() - start);
}

// --slow=PATH: every call over 10 us (--slow_us=N: N us), one line each: thread (main or worker),
// call, size in bytes, frame, when (ms from the start) and how long (us).
bool write_slow_calls(const char* path, const Timer& main_timer, const Timer& worker_timer,
                      Ticks start, double ns_per_tick) {
  FILE* out = std::fopen(path, "w");
  if (!out) {
    std::perror(path);
    return false;
  }
  for (const Timer* timer : {&main_timer, &worker_timer}) {
    for (const SlowCall& call : timer->slow_calls)
      std::fprintf(out, "%s %c %u %u %.3f %.3f\n", timer == &main_timer ? "main" : "worker",
                   call.op, call.size, call.frame,
                   static_cast<double>(call.at - start) * ns_per_tick / 1e6,
                   static_cast<double>(call.took) * ns_per_tick / 1e3);
  }
  return std::fclose(out) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long frames = args.get("frames", 40, 1500, 6000);
  const long objects = args.get("objects", 200, 200, 200);  // per frame, on average
  const long level_every = args.get("level", 20, 500, 1500);
  const long level_objects = args.get("level_objects", 2000, 100000, 100000);
  const long slow_us = args.get("slow_us", 10, 10, 10);  // what --slow lists
  const char* stats_path = nullptr;
  const char* slow_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--stats=", 8) == 0) stats_path = argv[i] + 8;
    if (std::strncmp(argv[i], "--slow=", 7) == 0) slow_path = argv[i] + 7;
  }
  constexpr int kLifetime = 300, kArrays = 8, kJobs = 64;

  // Everything the timed part records into or walks, allocated and touched before it.
  const auto [overhead, resolution] = timer_overhead_and_resolution();
  const auto slow = static_cast<Ticks>(static_cast<double>(slow_us) * 1e3 / rough_ns_per_tick());
  Timer main_timer(overhead, slow), worker_timer(overhead, slow);
  std::vector<Ticks> frame_ticks, level_ticks;
  frame_ticks.reserve(static_cast<std::size_t>(frames));
  level_ticks.reserve(static_cast<std::size_t>(frames / level_every + 1));
  std::vector<Object*> dies_in(kLifetime + 1);  // objects by frame of death, modulo 301
  Object* level = nullptr;
  JobRing ring;
  std::uint64_t worker_checksum = 0;
  std::thread worker([&] {
    while (void* job = ring.pop()) {
      auto* bytes = static_cast<unsigned char*>(job);
      std::uint32_t size;
      std::memcpy(&size, bytes, sizeof size);
      worker_checksum += size + bytes[size - 1];
      timed_free(worker_timer, job, size);
    }
  });

  wl::Rng rng(7);
  std::uint64_t checksum = 0;
  const double start_ns = monotonic_ns();
  const Ticks start = start_ticks();
  for (long frame = 0; frame < frames; ++frame) {
    main_timer.sum = 0;
    main_timer.frame = static_cast<std::uint32_t>(frame);
    const bool level_change = frame % level_every == 0;
    if (level_change) {
      for (Object*& list : dies_in) {
        checksum += free_objects(main_timer, list);
        list = nullptr;
      }
      checksum += free_objects(main_timer, level);
      level = nullptr;
      for (long i = 0; i < level_objects; ++i)
        level =
            new_object(main_timer, rng.size_between(16, 256), static_cast<std::uint32_t>(i), level);
    }

    // Spawn, then despawn what dies this frame.
    long n = objects / 2 + static_cast<long>(rng.below(static_cast<std::uint64_t>(objects + 1)));
    for (long i = 0; i < n; ++i) {
      std::uint64_t kind = rng.below(1000);
      std::size_t size = kind < 900   ? rng.size_between(16, 512)
                         : kind < 995 ? rng.size_between(1024, 16384)
                                      : rng.size_between(65536, 1 << 20);
      auto death = static_cast<std::size_t>(frame + 1 + static_cast<long>(rng.below(kLifetime)));
      Object*& list = dies_in[death % dies_in.size()];
      list = new_object(main_timer, size, static_cast<std::uint32_t>(frame + i), list);
    }
    Object*& dying = dies_in[static_cast<std::size_t>(frame) % dies_in.size()];
    checksum += free_objects(main_timer, dying);
    dying = nullptr;

    // Temporary arrays, grown side by side (so that realloc cannot always grow in place).
    unsigned char* arrays[kArrays];
    for (auto*& a : arrays) {
      a = static_cast<unsigned char*>(timed_malloc(main_timer, 64));
      std::memset(a, static_cast<int>(frame), 64);
    }
    for (std::size_t size = 128; size <= 2048; size *= 2) {
      for (auto*& a : arrays) {
        a = static_cast<unsigned char*>(
            main_timer('r', size, [&] { return wl::realloc(a, size); }));
        if (!a) std::abort();
        checksum += a[size / 2 - 1];  // the old contents came along
        std::memset(a + size / 2, static_cast<int>(size), size / 2);
      }
    }
    for (auto* a : arrays) {
      checksum += a[0] + a[2047];
      timed_free(main_timer, a, 2048);
    }

    // Jobs for the worker, which frees them.
    for (int i = 0; i < kJobs; ++i) {
      auto size = static_cast<std::uint32_t>(48 + rng.below(201));
      auto* job = static_cast<unsigned char*>(timed_malloc(main_timer, size));
      std::memset(job, static_cast<int>(frame + i), size);
      std::memcpy(job, &size, sizeof size);
      ring.push(job);
    }
    ring.publish();

    (level_change ? level_ticks : frame_ticks).push_back(main_timer.sum);
  }
  ring.push(nullptr);
  ring.publish();
  worker.join();
  const double ns_per_tick = (monotonic_ns() - start_ns) / static_cast<double>(end_ticks() - start);

  // The world is torn down at the end: its frees count as calls, in no frame.
  for (Object* list : dies_in) checksum += free_objects(main_timer, list);
  checksum += free_objects(main_timer, level);
  wl::print_checksum("latency", checksum * 31 + worker_checksum);

  if (slow_path && !write_slow_calls(slow_path, main_timer, worker_timer, start, ns_per_tick))
    return 1;
  if (!stats_path) return 0;
  FILE* out = std::fopen(stats_path, "w");
  if (!out) {
    std::perror(stats_path);
    return 1;
  }
  Histogram calls = main_timer.histogram;
  calls.add(worker_timer.histogram);
  const auto over = [&](double ns) {
    return static_cast<unsigned long long>(calls.at_least(static_cast<Ticks>(ns / ns_per_tick)));
  };
  std::fprintf(out, "calls %llu\ncalls_over_10us %llu\ncalls_over_100us %llu\n",
               static_cast<unsigned long long>(calls.total()), over(10e3), over(100e3));
  const std::pair<const char*, double> figures[] = {
      {"call_p50_ns", calls.quantile(0.5) * ns_per_tick},
      {"call_p99_ns", calls.quantile(0.99) * ns_per_tick},
      {"call_p99.9_ns", calls.quantile(0.999) * ns_per_tick},
      {"call_p99.99_ns", calls.quantile(0.9999) * ns_per_tick},
      {"call_max_ns", static_cast<double>(calls.max()) * ns_per_tick},
      {"frame_p50_us", frame_quantile(frame_ticks, 0.5) * ns_per_tick / 1e3},
      {"frame_p99_us", frame_quantile(frame_ticks, 0.99) * ns_per_tick / 1e3},
      {"frame_max_us", frame_quantile(frame_ticks, 1.0) * ns_per_tick / 1e3},
      {"level_p50_ms", frame_quantile(level_ticks, 0.5) * ns_per_tick / 1e6},
      {"level_max_ms", frame_quantile(level_ticks, 1.0) * ns_per_tick / 1e6},
      {"timer_overhead_ns", static_cast<double>(overhead) * ns_per_tick},
      {"timer_resolution_ns", static_cast<double>(resolution) * ns_per_tick},
  };
  for (auto& [name, value] : figures) std::fprintf(out, "%s %.3f\n", name, value);
  for (int i = 0; i < Histogram::kBuckets; ++i)
    if (calls.count(i))
      std::fprintf(out, "hist %.3f %llu\n", Histogram::middle(i) * ns_per_tick,
                   static_cast<unsigned long long>(calls.count(i)));
  return std::fclose(out) == 0 ? 0 : 1;
}
