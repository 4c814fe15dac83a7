// No write into the first bytes of a freed block makes malloc hand out a live block, or memory
// outside the pools: wherever the block waits (this thread's cache, its class's central stack,
// or back in its span after malloc_trim(0)), whatever the write puts there (the block's own index
// in its span, a free or a live neighbour's index, zero, random bytes, a pointer to a live block
// or to memory outside the pools) and however much of it (4, 8 or 16 bytes). The program runs
// on, or stops with the corrupted-free-list report before it follows the damaged link. Each case
// runs in a child process (a death test) and in a thread of its own, whose cache starts empty.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kSpanShift = 17;  // spans of 128 KiB, aligned to their size

enum class Place { kThreadCache, kCentralStack, kSpan };
enum class Value {
  kOwnIndex,
  kFreeNeighbour,
  kLiveNeighbour,
  kZero,
  kRandom,
  kLivePointer,
  kOutsidePointer
};
constexpr Value kValues[] = {Value::kOwnIndex,      Value::kFreeNeighbour, Value::kLiveNeighbour,
                             Value::kZero,          Value::kRandom,        Value::kLivePointer,
                             Value::kOutsidePointer};
constexpr std::size_t kWidths[] = {4, 8, 16};

const char* name_of(Value value) {
  switch (value) {
    case Value::kOwnIndex:
      return "its own index";
    case Value::kFreeNeighbour:
      return "a free neighbour's index";
    case Value::kLiveNeighbour:
      return "a live neighbour's index";
    case Value::kZero:
      return "zero";
    case Value::kRandom:
      return "random bytes";
    case Value::kLivePointer:
      return "a pointer to a live block";
    case Value::kOutsidePointer:
      return "a pointer outside the pools";
  }
  return "?";
}

// The case a child runs (set before the fork: the child sees it as it was).
struct Case {
  std::size_t size;
  Place place;
  Value value;
  std::size_t width;
  std::uint64_t seed;
};
Case g_case;

// The blocks the child holds, in an open-addressing set of static memory: the checks must not
// allocate from the pools they test. add() says false for a block held already.
class HeldBlocks {
 public:
  bool add(void* block) {
    std::size_t i = reinterpret_cast<std::uintptr_t>(block) / 16 % kSlots;
    for (; slots_[i] != nullptr; i = (i + 1) % kSlots)
      if (slots_[i] == block) return false;
    slots_[i] = block;
    return true;
  }

 private:
  static constexpr std::size_t kSlots = std::size_t{1} << 17;
  void* slots_[kSlots];
};
HeldBlocks g_held;
constexpr std::size_t kLive = 64;
int g_outside;

std::uintptr_t span_of(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) >> kSpanShift;
}
std::uint32_t index_in_span(const void* p, std::size_t size) {
  const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(p) & ((1u << kSpanShift) - 1);
  return static_cast<std::uint32_t>(offset / size);
}

[[noreturn]] void fail(const char* what, const void* p) {
  std::fprintf(stderr, "%s: %p\n", what, p);
  std::_Exit(1);
}

// In the child: frees two blocks of one span (p, then q: back in the span, q links to p), puts them
// where the case says, writes the case's value over p's first bytes, then allocates a few spans'
// worth of blocks of the class, keeping them all, and checks that none of them is live or outside
// the pools.
void run_case() {
  const Case c = g_case;
  void* live[kLive];
  for (void*& block : live) block = malloc(opaque(c.size));
  // p and q: two blocks of one span, with a third of the span, which stays live, as a
  // neighbour.
  void *p = nullptr, *q = nullptr, *neighbour = nullptr;
  for (std::size_t i = 0; i < kLive && neighbour == nullptr; ++i) {
    std::size_t same[3], found = 0;
    for (std::size_t j = 0; j < kLive && found < 3; ++j)
      if (span_of(live[j]) == span_of(live[i])) same[found++] = j;
    if (found < 3) continue;
    p = live[same[0]];
    q = live[same[1]];
    neighbour = live[same[2]];
  }
  if (neighbour == nullptr) fail("no three blocks in one span", nullptr);
  for (void* block : live)
    if (block != p && block != q) g_held.add(block);
  switch (c.place) {
    case Place::kThreadCache:
      free(p);
      free(q);
      break;
    case Place::kCentralStack:  // an exiting thread's cache goes onto the central stacks
      std::thread([p, q] {
        free(p);
        free(q);
      }).join();
      break;
    case Place::kSpan:
      free(p);
      free(q);
      malloc_trim(0);
      break;
  }
  unsigned char bytes[16];
  const auto fill_with = [&bytes](const auto& value) {
    for (std::size_t at = 0; at < sizeof bytes; at += sizeof value)
      std::memcpy(bytes + at, &value, sizeof value);
  };
  switch (c.value) {
    case Value::kOwnIndex:
      fill_with(index_in_span(p, c.size));
      break;
    case Value::kFreeNeighbour:
      fill_with(index_in_span(q, c.size));
      break;
    case Value::kLiveNeighbour:
      fill_with(index_in_span(neighbour, c.size));
      break;
    case Value::kZero:
      fill_with(std::uint64_t{0});
      break;
    case Value::kRandom: {
      std::mt19937_64 rng(c.seed);
      const std::uint64_t words[2] = {rng(), rng()};
      std::memcpy(bytes, words, sizeof words);
      break;
    }
    case Value::kLivePointer:
      fill_with(neighbour);
      break;
    case Value::kOutsidePointer:
      fill_with(static_cast<void*>(&g_outside));
      break;
  }
  std::memcpy(hide(p), bytes, c.width);

  const std::size_t blocks_per_span = (std::size_t{1} << kSpanShift) / c.size;
  // Four spans' worth and more (33,280 blocks at most, which g_held has room for), each checked
  // as it comes: a damaged list may be reported at a later refill.
  for (std::size_t i = 0; i < 4 * blocks_per_span + 512; ++i) {
    void* block = malloc(opaque(c.size));
    if (poolalloc_owns(block) != 1) fail("handed out memory outside the pools", block);
    if (!g_held.add(block)) fail("handed out a live block", block);
  }
  std::_Exit(0);
}

bool ran_on_or_aborted(int status) {
  return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
         (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

class FreedBlockWritesDeathTest : public testing::TestWithParam<std::tuple<std::size_t, Place>> {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

TEST_P(FreedBlockWritesDeathTest, NeverMakeMallocHandOutALiveBlock) {
  const auto [size, place] = GetParam();
  const std::uint64_t seed = poolalloc_test::test_seed(20261125);
  // Nothing on stderr (the program ran on), or the report alone (it stopped).
  const std::string report = "^(poolalloc: the free list of size class [0-9]+ \\(" +
                             std::to_string(size) + "-byte blocks\\) is corrupted: [^\n]*\n)?$";
  for (const Value value : kValues) {
    for (const std::size_t width : kWidths) {
      g_case = {size, place, value, width, seed};
      EXPECT_EXIT(std::thread(run_case).join(), ran_on_or_aborted, report)
          << width << " bytes of " << name_of(value);
    }
  }
}

std::string place_name(Place place) {
  return place == Place::kThreadCache    ? "InAThreadCache"
         : place == Place::kCentralStack ? "OnACentralStack"
                                         : "BackInItsSpan";
}

INSTANTIATE_TEST_SUITE_P(, FreedBlockWritesDeathTest,
                         testing::Combine(testing::Values(16, 64, 512, 4096, 32768),
                                          testing::Values(Place::kThreadCache, Place::kCentralStack,
                                                          Place::kSpan)),
                         [](const testing::TestParamInfo<std::tuple<std::size_t, Place>>& info) {
                           return "Block" + std::to_string(std::get<0>(info.param)) +
                                  place_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace malloc_test
