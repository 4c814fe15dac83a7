// The allocator's internals driven directly from several threads: thread caches, the central
// lists and span carving, with blocks freed by other threads than the ones that took them.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "allocator.hpp"
#include "poolalloc/poolalloc.h"
#include "span_carving.hpp"
#include "stats.hpp"
#include "test_seed.hpp"
#include "thread_cache.hpp"

namespace {

using namespace poolalloc::internal;

unsigned char pattern_of(const void* p, std::size_t size) {
  return static_cast<unsigned char>((reinterpret_cast<std::uintptr_t>(p) >> 4) ^ size);
}

struct Block {
  unsigned char* p;
  std::size_t size;
};

void fill(const Block& b) {
  std::memset(b.p, pattern_of(b.p, b.size), b.size);
}
bool intact(const Block& b) {
  const unsigned char expected = pattern_of(b.p, b.size);
  for (std::size_t i = 0; i < b.size; ++i)
    if (b.p[i] != expected) return false;
  return true;
}

TEST(CoreThreads, BlocksMoveBetweenThreadsIntact) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  const std::uint64_t seed = poolalloc_test::test_seed(0);
  std::mutex mailbox_lock;
  std::vector<Block> mailbox;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(seed + t);
      std::vector<Block> mine;
      for (int i = 0; i < kRounds; ++i) {
        const std::size_t size = 1 + rng() % 2048;
        Block b{static_cast<unsigned char*>(allocate(size)), size};
        ASSERT_NE(b.p, nullptr);
        ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b.p) % kMinAlignment, 0u);
        fill(b);
        mine.push_back(b);
        if (mine.size() > 64) {
          // Hand half to whoever comes next, free what others handed us.
          std::vector<Block> theirs;
          {
            std::lock_guard guard(mailbox_lock);
            theirs.swap(mailbox);
            mailbox.assign(mine.begin(), mine.begin() + 32);
          }
          mine.erase(mine.begin(), mine.begin() + 32);
          for (const Block& other : theirs) {
            if (!intact(other)) ++corrupted;
            deallocate(other.p);
          }
        }
      }
      for (const Block& b : mine) {
        if (!intact(b)) ++corrupted;
        deallocate(b.p);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Block& b : mailbox) {
    if (!intact(b)) ++corrupted;
    deallocate(b.p);
  }
  EXPECT_EQ(corrupted.load(), 0);
  const poolalloc_stats stats = collect_stats();
  EXPECT_EQ(stats.pooled_live, 0u);
  EXPECT_EQ(stats.pooled_requests, stats.pooled_frees);
}

TEST(CoreThreads, ExitedThreadsGiveTheirCachesBack) {
  const std::uint64_t before = collect_stats().thread_caches;
  for (int wave = 0; wave < 20; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([] {
        void* p = allocate(100);
        deallocate(p);
      });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(collect_stats().thread_caches, before);
}

TEST(CoreThreads, TrimGivesEmptySpansBack) {
  std::vector<void*> blocks;
  for (int i = 0; i < 100000; ++i) blocks.push_back(allocate(256));
  const std::size_t held = carved_bytes();
  EXPECT_GE(held, 100000u * 256);
  for (void* p : blocks) deallocate(p);
  trim(0);
  EXPECT_LT(carved_bytes(), held / 10);
}

}  // namespace
