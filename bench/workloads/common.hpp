// Shared helpers of the allocator workloads. Each workload is a plain program that calls only
// the standard malloc/new API (malloc, realloc and free as wl::malloc, wl::realloc, wl::free),
// so that any allocator can be put under it with LD_PRELOAD. It prints a checksum computed from
// the data it wrote (never from addresses), so the result is the same under every allocator and
// the compiler cannot drop the allocations.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#ifdef POOLALLOC_BENCH_C_API
#include <poolalloc/poolalloc.h>
#endif

namespace wl {

// The workloads' malloc, realloc and free. On Linux they are the C library's, whichever
// allocator is preloaded. Windows has no preloading and poolalloc does not replace the C
// runtime's malloc there: the builds linked with libpoolalloc.a (bench/CMakeLists.txt) call its
// C API, the others the C runtime's heap. Global new is libpoolalloc.a's where it is linked.
#ifdef POOLALLOC_BENCH_C_API
inline void* malloc(std::size_t size) {
  return poolalloc_malloc(size);
}
inline void* realloc(void* p, std::size_t size) {
  return poolalloc_realloc(p, size);
}
inline void free(void* p) {
  poolalloc_free(p);
}
#else
using std::free;
using std::malloc;
using std::realloc;
#endif

// --key=value arguments. --scale=smoke|quick|full picks the defaults of every other parameter;
// an explicit parameter overrides them.
class Args {
 public:
  Args(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg.substr(0, 2) != "--" || arg.find('=') == std::string_view::npos) {
        std::fprintf(stderr, "%s: arguments are --key=value, got '%s'\n", argv[0], argv[i]);
        std::exit(2);
      }
      auto eq = arg.find('=');
      values_[std::string(arg.substr(2, eq - 2))] = std::string(arg.substr(eq + 1));
    }
    auto scale = values_.find("scale");
    scale_ = scale == values_.end() ? "full" : scale->second;
    if (scale_ != "smoke" && scale_ != "quick" && scale_ != "full") {
      std::fprintf(stderr, "%s: --scale is smoke, quick or full\n", argv[0]);
      std::exit(2);
    }
  }

  // The value of --name, or the default for the scale in use.
  long get(const char* name, long smoke, long quick, long full) const {
    auto it = values_.find(name);
    if (it != values_.end()) return std::strtol(it->second.c_str(), nullptr, 10);
    return scale_ == "smoke" ? smoke : scale_ == "quick" ? quick : full;
  }

 private:
  std::map<std::string, std::string> values_;
  std::string scale_;
};

// xorshift64*: fast, deterministic, the same sequence everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [0, n).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // In [lo, hi], log-uniform: small sizes are as common as in real programs.
  std::size_t size_between(std::size_t lo, std::size_t hi) {
    int lo_bits = 63 - __builtin_clzll(lo), hi_bits = 63 - __builtin_clzll(hi);
    int bits = lo_bits + static_cast<int>(below(static_cast<std::uint64_t>(hi_bits - lo_bits + 1)));
    std::size_t base = std::size_t{1} << bits;
    std::size_t size = base + below(base);
    return size < lo ? lo : size > hi ? hi : size;
  }

 private:
  std::uint64_t state_;
};

inline void print_checksum(const char* workload, std::uint64_t checksum) {
  std::printf("%s checksum %llu\n", workload, static_cast<unsigned long long>(checksum));
}

// The pointer goes through a volatile store so the allocation is observably used.
inline void* volatile sink_slot = nullptr;
inline void sink(void* p) {
  sink_slot = p;
}

}  // namespace wl
