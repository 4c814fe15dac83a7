// Helpers shared by the malloc tests: values the compiler cannot see through, alignment and
// fill-pattern checks, and the process's resident set size.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace malloc_test {

// Returns v through a volatile, so the compiler can neither fold a request size into a
// compile-time constant (and warn that it is too large) nor reason about the result.
template <class T>
T opaque(T v) {
  volatile T copy = v;
  return copy;
}

// Hides where a pointer came from, so GCC's -Wfree-nonheap-object and -Wuse-after-free
// cannot object to the deliberate misuse some tests perform.
template <class T>
T* hide(T* p) {
  asm volatile("" : "+r"(p));
  return p;
}

inline bool is_aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// A byte pattern that depends on a seed and the offset, so a block filled with one seed and
// checked with another (a block handed out twice, or mixed up with a neighbour) fails.
inline unsigned char pattern_byte(std::uintptr_t seed, std::size_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 29;
  return static_cast<unsigned char>(x ^ (x >> 8));
}

inline void fill(void* p, std::size_t n, std::uintptr_t seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(seed, i);
}

// Offset of the first byte that differs from the pattern, or n if all match.
inline std::size_t first_mismatch(const void* p, std::size_t n, std::uintptr_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] != pattern_byte(seed, i)) return i;
  }
  return n;
}

inline bool matches(const void* p, std::size_t n, std::uintptr_t seed) {
  return first_mismatch(p, n, seed) == n;
}

inline bool all_bytes_are(const void* p, std::size_t n, unsigned char value) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] != value) return false;
  }
  return true;
}

// Resident set size in bytes, from /proc/self/statm (read with open/read: no allocation, so
// reading it does not disturb what it measures).
// Minor page faults so far, of the process (RUSAGE_SELF) or of the calling thread
// (RUSAGE_THREAD).
inline long minor_faults(int who = RUSAGE_SELF) {
  rusage usage{};
  getrusage(who, &usage);
  return usage.ru_minflt;
}

inline std::size_t resident_bytes() {
  char buf[128] = {};
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  // Fields: size resident shared text lib data dt, in pages.
  const char* field = std::strchr(buf, ' ');
  if (field == nullptr) return 0;
  std::size_t pages = 0;
  for (++field; *field >= '0' && *field <= '9'; ++field) pages = pages * 10 + (*field - '0');
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

inline std::size_t page_size() {
  return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

}  // namespace malloc_test
