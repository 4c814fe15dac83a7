// Blocks allocated by one thread and freed by another (a port of the idea of mimalloc's
// test-stress): a ring of threads, each sending blocks to the next through a queue, and threads
// whose only allocator call is free. Every block carries a pattern derived from its address and
// size, checked when it is freed, so a block handed out twice or overwritten is caught.
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

struct Block {
  void* p = nullptr;
  size_t size = 0;
};

uintptr_t seed_of(const void* p, size_t size) {
  return reinterpret_cast<uintptr_t>(p) ^ (size << 40);
}

// Mostly small, some up to the largest class, some (about 1 in 10) above it.
size_t random_size(std::mt19937_64& rng) {
  const uint64_t r = rng();
  switch (r % 10) {
    case 0:
      return 32769 + (r >> 8) % (40000 - 32769 + 1);
    case 1:
    case 2:
      return 1 + (r >> 8) % 32768;
    default:
      return 1 + (r >> 8) % 512;
  }
}

Block make_block(std::mt19937_64& rng) {
  Block b;
  b.size = random_size(rng);
  b.p = malloc(b.size);
  if (b.p != nullptr) fill(b.p, b.size, seed_of(b.p, b.size));
  return b;
}

// Checks the pattern and frees; returns false if the block was damaged.
bool check_and_free(const Block& b) {
  bool intact = b.p != nullptr && matches(b.p, b.size, seed_of(b.p, b.size)) &&
                malloc_usable_size(b.p) >= b.size;
  free(b.p);
  return intact;
}

// Thread i sends blocks to thread i+1 (mod n) and frees what thread i-1 sends it, while it
// also allocates and frees a private working set.
class Ring {
 public:
  Ring(int threads, int blocks_per_thread, uint64_t seed)
      : threads_(threads), per_thread_(blocks_per_thread), seed_(seed), inbox_(threads) {}

  void run() {
    std::vector<std::thread> workers;
    for (int i = 0; i < threads_; ++i) workers.emplace_back([this, i] { work(i); });
    for (std::thread& t : workers) t.join();
  }

  int damaged() const { return damaged_.load(); }

 private:
  static constexpr size_t kMaxQueued = 64;
  static constexpr size_t kWorkingSet = 32;

  void work(int self) {
    std::mt19937_64 rng(seed_ + static_cast<uint64_t>(self) * 7919);
    const int next = (self + 1) % threads_;
    std::vector<Block> own(kWorkingSet);
    int sent = 0;
    int received = 0;
    while (sent < per_thread_ || received < per_thread_) {
      Block incoming;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] {
          return !inbox_[self].empty() || (sent < per_thread_ && inbox_[next].size() < kMaxQueued);
        });
        if (!inbox_[self].empty()) {
          incoming = inbox_[self].front();
          inbox_[self].pop_front();
        }
      }
      if (incoming.p != nullptr) {
        if (!check_and_free(incoming)) damaged_.fetch_add(1);
        ++received;
        changed_.notify_all();
        continue;
      }
      Block outgoing = make_block(rng);
      {
        std::lock_guard lock(mutex_);
        inbox_[next].push_back(outgoing);
      }
      changed_.notify_all();
      ++sent;
      Block& slot = own[rng() % kWorkingSet];
      if (slot.p != nullptr && !check_and_free(slot)) damaged_.fetch_add(1);
      slot = make_block(rng);
    }
    for (Block& b : own) {
      if (b.p != nullptr && !check_and_free(b)) damaged_.fetch_add(1);
    }
  }

  const int threads_;
  const int per_thread_;
  const uint64_t seed_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<Block>> inbox_;
  std::atomic<int> damaged_{0};
};

class CrossThreadRing : public testing::TestWithParam<int> {};

TEST_P(CrossThreadRing, BlocksSurviveTheTripAndAreFreedByTheReceiver) {
  const int threads = GetParam();
  Ring ring(threads, 48000 / threads, poolalloc_test::test_seed(1));
  ring.run();
  EXPECT_EQ(ring.damaged(), 0);
}

INSTANTIATE_TEST_SUITE_P(Threads, CrossThreadRing, testing::Values(2, 4, 8, 16));

// Threads whose only allocator call is free (jemalloc tsd: "the thread only did free() in its
// life time"): rounds of blocks allocated by the main thread and freed by fresh threads. If
// what those threads free were stranded in per-thread caches that are never flushed because
// the thread never allocated, the resident set would grow by the whole amount every round.
TEST(FreeOnlyThreads, BlocksTheyFreeAreReused) {
  constexpr int kRounds = 24;
  constexpr int kThreads = 8;
  constexpr size_t kBlocksPerThread = 16384;  // 8 x 16384 x ~272 B: about 34 MiB a round
  std::atomic<int> damaged{0};
  size_t baseline = 0;
  const uint64_t seed = poolalloc_test::test_seed(0);
  for (int round = 0; round < kRounds; ++round) {
    std::mt19937_64 rng(seed + round);
    std::vector<std::vector<Block>> batches(kThreads);
    for (auto& batch : batches) {
      for (size_t i = 0; i < kBlocksPerThread; ++i) {
        Block b;
        b.size = 16 + rng() % 512;
        if (i % 1024 == 0) b.size = 32769 + rng() % 10000;
        b.p = malloc(b.size);
        fill(b.p, b.size, seed_of(b.p, b.size));
        batch.push_back(b);
      }
    }
    std::vector<std::thread> freers;
    for (auto& batch : batches) {
      freers.emplace_back([&batch, &damaged] {
        for (const Block& b : batch) {
          if (!matches(b.p, b.size, seed_of(b.p, b.size))) damaged.fetch_add(1);
          free(b.p);  // the only allocator call this thread makes
        }
      });
    }
    for (std::thread& t : freers) t.join();
    if (round == 1) baseline = resident_bytes();
  }
  EXPECT_EQ(damaged.load(), 0);
  const size_t growth = resident_bytes() - std::min(baseline, resident_bytes());
  EXPECT_LT(growth, 64 * kMiB) << "resident set grew by " << growth / kMiB
                               << " MiB over rounds that each free everything they allocate";
}

}  // namespace
}  // namespace malloc_test
