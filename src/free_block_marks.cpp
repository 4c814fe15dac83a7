#include "free_block_marks.hpp"

#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

#include <cstring>

#include "fast_path.hpp"
#include "misuse.hpp"

namespace poolalloc::internal {
namespace {

// splitmix64's finaliser.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

// Without getrandom (a kernel whose entropy pool is not ready yet): the 16 random bytes the
// kernel gave the process, which also seed glibc's stack and pointer guards, compressed
// through a one-way combination with the clock so that a key read from a freed block does
// not give them away.
std::uint64_t fallback_key() {
  std::uint64_t random[2] = {};
  if (const auto at_random = getauxval(AT_RANDOM); at_random != 0)
    std::memcpy(random, reinterpret_cast<const void*>(at_random), sizeof random);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const std::uint64_t clock = static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
                              static_cast<std::uint64_t>(now.tv_nsec);
  const std::uint64_t place = reinterpret_cast<std::uintptr_t>(&now);
  return mix(random[0] ^ clock) ^ mix(random[1] + place);
}

}  // namespace

void choose_free_block_key() {
  std::uint64_t key = 0;
  if (getrandom(&key, sizeof key, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof key))
    key = fallback_key();
  // A zero key would make a block whose second word is its own address look free.
  g_free_block_key = key != 0 ? key : 0x5bd1e9955bd1e995u;
}

void check_free_block(void* block, unsigned cls) {
  if (!region_owns(block) || class_of_block(block) != cls || !is_marked_free(block)) [[unlikely]]
    report_corrupted_free_list(block, cls);
}

}  // namespace poolalloc::internal
