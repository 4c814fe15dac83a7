// A write into a freed block (a use after free, or an overflow of the block before it) cannot
// make malloc hand out the address it names. The thread caches and the central stacks keep free
// blocks as arrays of pointers outside the blocks, so there is nothing in a cached block to
// forge; a block back in its span holds the index of the next free block of the span, and a
// forged index that leads to a live block is reported. Each scenario runs in a thread of its
// own, whose cache starts empty.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

void run_in_a_new_thread(void (*scenario)()) {
  std::thread(scenario).join();
}

class SafeLinkingDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
};

void* g_target = nullptr;  // the live block the forgeries name

// Frees r and then p, writes `forge` over p's first two words, and allocates as many blocks as
// the bin can hold; says so on stderr if one of them is the live target.
void forge_cached_block(void (*forge)(std::uintptr_t* freed, void* other)) {
  void* r = malloc(opaque<size_t>(64));
  auto* p = static_cast<std::uintptr_t*>(malloc(opaque<size_t>(64)));
  g_target = malloc(opaque<size_t>(64));
  std::memset(g_target, 0x41, 64);
  free(r);
  free(p);
  forge(hide(p), r);
  for (int i = 0; i < 2048; ++i) {
    if (malloc(opaque<size_t>(64)) == g_target) std::fputs("handed out the live block\n", stderr);
  }
  std::_Exit(0);
}

TEST_F(SafeLinkingDeathTest, APlainPointerWrittenIntoAFreedBlockIsNeverHandedOut) {
  EXPECT_EXIT(run_in_a_new_thread([] {
                forge_cached_block([](std::uintptr_t* freed, void*) {
                  freed[0] = freed[1] = reinterpret_cast<std::uintptr_t>(g_target);
                });
              }),
              testing::ExitedWithCode(0), "^$");
}

TEST_F(SafeLinkingDeathTest, BytesWrittenIntoAFreedBlockAreNeverFollowed) {
  EXPECT_EXIT(
      run_in_a_new_thread([] {
        forge_cached_block([](std::uintptr_t* freed, void*) { std::memset(freed, 'A', 16); });
      }),
      testing::ExitedWithCode(0), "^$");
}

// The attacker knows where the blocks lie relative to each other but not the key: flipping the
// bits by which the other freed block and the target differ, as against a list linked through
// the blocks.
TEST_F(SafeLinkingDeathTest, ALinkRedirectedByDifferenceIsNeverFollowed) {
  EXPECT_EXIT(run_in_a_new_thread([] {
                forge_cached_block([](std::uintptr_t* freed, void* other) {
                  freed[0] ^= reinterpret_cast<std::uintptr_t>(other) ^
                              reinterpret_cast<std::uintptr_t>(g_target);
                });
              }),
              testing::ExitedWithCode(0), "^$");
}

// A block back in its span (malloc_trim(0) empties the caches and the central stacks into the
// spans) is a bit of its span's bitmap; nothing is read from the block. An index written into it,
// naming a live block of the same span, as a span's link once held, leads no malloc there.
void forge_span_link() {
  constexpr int kBlocks = 64;
  void* blocks[kBlocks];
  for (void*& block : blocks) block = malloc(opaque<size_t>(64));
  const auto span_of = [](void* block) { return reinterpret_cast<std::uintptr_t>(block) >> 17; };
  void* p = nullptr;
  for (int i = 0; i < kBlocks && p == nullptr; ++i) {
    for (int j = 0; j < kBlocks && p == nullptr; ++j) {
      if (i != j && span_of(blocks[i]) == span_of(blocks[j])) {
        p = blocks[i];
        g_target = blocks[j];
      }
    }
  }
  if (p == nullptr) {
    std::fputs("no two blocks in one span\n", stderr);
    std::_Exit(1);
  }
  std::memset(g_target, 0x41, 64);
  free(p);
  malloc_trim(0);
  const auto target_index =
      static_cast<std::uint32_t>((reinterpret_cast<std::uintptr_t>(g_target) & 0x1ffff) / 64);
  std::memcpy(hide(p), &target_index, sizeof target_index);
  for (int i = 0; i < 100000; ++i) {
    if (malloc(opaque<size_t>(64)) == g_target) std::fputs("handed out the live block\n", stderr);
  }
  std::_Exit(0);
}

TEST_F(SafeLinkingDeathTest, AnIndexWrittenIntoABlockBackInItsSpanLeadsNoMallocToALiveBlock) {
  EXPECT_EXIT(run_in_a_new_thread(forge_span_link), testing::ExitedWithCode(0), "^$");
}

}  // namespace
}  // namespace malloc_test
