// A randomized multithreaded consistency test. Eight threads each keep a table of live blocks
// and pick random operations: malloc, calloc, realloc, posix_memalign, aligned_alloc,
// memalign, free, and sending a block to another thread, which frees or keeps it (each thread
// has a lock-protected mailbox). Every block carries a pattern derived from its address, size
// and a per-block seed, verified before every free and realloc and when a block changes hands;
// alignment is checked on return and calloc's zeroing before the pattern is written.
//
// The same source is built twice: against libpoolalloc.so (stress_random_test) and against
// libpoolalloc-debug.so (stress_random_debug_test, in tests/debug). Each run is bounded by a
// number of operations and a few seconds, whichever comes first. The seed is fixed;
// PA_TEST_SEED=<n> chooses another (the interleaving of the threads still differs from run to
// run).
#include <malloc.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "test_seed.hpp"

namespace {

using malloc_test::all_bytes_are;
using malloc_test::is_aligned;

constexpr int kThreads = 8;
constexpr std::size_t kSlots = 64;
constexpr std::uint64_t kMaxOperationsPerThread = 300000;
constexpr auto kTimeBudget = std::chrono::seconds(3);

struct Block {
  unsigned char* p = nullptr;
  std::size_t size = 0;
  std::uint64_t seed = 0;
};

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  return x ^ (x >> 33);
}

std::uint64_t key_of(const Block& b) {
  return mix(reinterpret_cast<std::uintptr_t>(b.p) ^ mix(b.size) ^ b.seed);
}

// The pattern, 8 bytes at a time: word i of a block is mix(key + i).
void fill(const Block& b) {
  const std::uint64_t key = key_of(b);
  std::size_t i = 0;
  for (; i + 8 <= b.size; i += 8) {
    const std::uint64_t word = mix(key + i);
    std::memcpy(b.p + i, &word, 8);
  }
  const std::uint64_t word = mix(key + i);
  std::memcpy(b.p + i, &word, b.size - i);
}

// Whether the first `n` bytes still hold the pattern of `b` (b.size >= n).
bool intact(const Block& b, std::size_t n) {
  const std::uint64_t key = key_of(b);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t word = mix(key + i);
    if (std::memcmp(b.p + i, &word, 8) != 0) return false;
  }
  const std::uint64_t word = mix(key + i);
  return std::memcmp(b.p + i, &word, n - i) == 0;
}

// Mostly small; some up to the largest size class (32 KiB); a few from the system allocator.
std::size_t random_size(std::mt19937_64& rng) {
  const std::uint64_t r = rng();
  switch (r % 64) {
    case 0:
      return 32 * 1024 + (r >> 8) % (96 * 1024);
    case 1:
    case 2:
    case 3:
      return (r >> 8) % (32 * 1024 + 1);
    case 4:
      return 0;
    default:
      return (r >> 8) % 512 + 1;
  }
}

struct Mailbox {
  std::mutex lock;
  std::vector<Block> blocks;
};

class RandomStress {
 public:
  explicit RandomStress(std::uint64_t seed) : seed_(seed) {}

  void run() {
    deadline_ = std::chrono::steady_clock::now() + kTimeBudget;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back([this, t] { work(t); });
    for (auto& thread : threads) thread.join();
    for (Mailbox& mailbox : mailboxes_) {
      for (const Block& b : mailbox.blocks) check_and_free(b, "left in a mailbox");
      mailbox.blocks.clear();
    }
  }

  std::uint64_t operations() const { return operations_.load(); }
  int errors() const { return errors_.load(); }
  std::string first_error() const {
    std::lock_guard<std::mutex> guard(error_lock_);
    return first_error_;
  }

 private:
  void fail(const char* what, const Block& b) {
    if (errors_.fetch_add(1) != 0) return;
    std::lock_guard<std::mutex> guard(error_lock_);
    first_error_ = std::string(what) + ": block " +
                   std::to_string(reinterpret_cast<std::uintptr_t>(b.p)) + " of " +
                   std::to_string(b.size) + " bytes";
  }

  void check_and_free(const Block& b, const char* when) {
    if (!intact(b, b.size)) fail(when, b);
    if (malloc_usable_size(b.p) < b.size) fail("malloc_usable_size too small", b);
    free(b.p);
  }

  Block allocate(std::mt19937_64& rng) {
    Block b;
    b.size = random_size(rng);
    b.seed = rng();
    std::size_t alignment = alignof(std::max_align_t);
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        b.p = static_cast<unsigned char*>(calloc(1, b.size));
        if (b.p != nullptr && !all_bytes_are(b.p, b.size, 0)) fail("calloc not zeroed", b);
        break;
      }
      case 3: {
        alignment = std::size_t{16} << rng() % 13;  // 16 .. 64 KiB
        void* p = nullptr;
        if (posix_memalign(&p, alignment, b.size) != 0) p = nullptr;
        b.p = static_cast<unsigned char*>(p);
        break;
      }
      case 4:
        alignment = std::size_t{16} << rng() % 9;  // 16 .. 4 KiB
        b.p = static_cast<unsigned char*>(aligned_alloc(alignment, b.size));
        break;
      case 5:
        alignment = std::size_t{32} << rng() % 6;  // 32 .. 1 KiB
        b.p = static_cast<unsigned char*>(memalign(alignment, b.size));
        break;
      default:
        b.p = static_cast<unsigned char*>(malloc(b.size));
        break;
    }
    if (b.p == nullptr) {
      fail("allocation failed", b);
      return {};
    }
    if (!is_aligned(b.p, alignment)) fail("misaligned", b);
    fill(b);
    return b;
  }

  void reallocate(Block& b, std::mt19937_64& rng) {
    if (!intact(b, b.size)) fail("damaged before realloc", b);
    const std::size_t new_size = rng() % 4 == 0 ? random_size(rng) : b.size + rng() % 256 + 1;
    if (new_size == 0) {  // realloc(p, 0) would free; keep the test's books simple
      return;
    }
    Block moved = b;
    moved.p = static_cast<unsigned char*>(realloc(b.p, new_size));
    if (moved.p == nullptr) {
      fail("realloc failed", b);
      return;
    }
    if (!is_aligned(moved.p, alignof(std::max_align_t))) fail("realloc misaligned", moved);
    // The old contents, up to the smaller size, must have moved along: compare them with the
    // pattern of the old block, which depends on the old address.
    const std::uint64_t old_key = key_of(b);
    const std::size_t kept = std::min(b.size, new_size);
    for (std::size_t i = 0; i < kept; i += 8) {
      const std::uint64_t word = mix(old_key + i);
      if (std::memcmp(moved.p + i, &word, std::min<std::size_t>(8, kept - i)) != 0) {
        fail("realloc lost the contents", moved);
        break;
      }
    }
    moved.size = new_size;
    moved.seed = rng();
    fill(moved);
    b = moved;
  }

  void work(int self) {
    std::mt19937_64 rng(mix(seed_ + static_cast<std::uint64_t>(self)));
    std::array<Block, kSlots> slots{};
    std::vector<Block> received;
    std::uint64_t done = 0;
    for (; done < kMaxOperationsPerThread; ++done) {
      if (done % 256 == 0 && std::chrono::steady_clock::now() > deadline_) break;
      Block& slot = slots[rng() % kSlots];
      const unsigned op = rng() % 16;
      if (slot.p == nullptr) {
        slot = allocate(rng);
      } else if (op < 5) {
        check_and_free(slot, "damaged before free");
        slot = {};
      } else if (op < 10) {
        reallocate(slot, rng);
      } else if (op < 12) {
        if (!intact(slot, slot.size)) fail("damaged before sending", slot);
        Mailbox& to = mailboxes_[rng() % kThreads];
        std::lock_guard<std::mutex> guard(to.lock);
        to.blocks.push_back(slot);
        slot = {};
      } else if (op < 13) {
        {
          std::lock_guard<std::mutex> guard(mailboxes_[self].lock);
          received.swap(mailboxes_[self].blocks);
        }
        // Keep what fits in empty slots, free the rest: either way, check it first.
        for (const Block& b : received) {
          Block& empty = slots[rng() % kSlots];
          if (empty.p == nullptr && intact(b, b.size)) {
            empty = b;
          } else {
            check_and_free(b, "damaged in the mailbox");
          }
        }
        received.clear();
      } else if (!intact(slot, slot.size)) {
        fail("damaged while live", slot);
      }
    }
    for (const Block& b : slots) {
      if (b.p != nullptr) check_and_free(b, "damaged at the end");
    }
    operations_.fetch_add(done);
  }

  const std::uint64_t seed_;
  std::chrono::steady_clock::time_point deadline_;
  std::array<Mailbox, kThreads> mailboxes_;
  std::atomic<std::uint64_t> operations_{0};
  std::atomic<int> errors_{0};
  mutable std::mutex error_lock_;
  std::string first_error_;
};

TEST(RandomStress, EightThreadsWithCrossThreadFreesKeepEveryBlockIntact) {
  const std::uint64_t seed = poolalloc_test::test_seed(1);
  RandomStress stress(seed);
  stress.run();
  std::printf("%llu operations\n", static_cast<unsigned long long>(stress.operations()));
  EXPECT_EQ(stress.errors(), 0) << stress.first_error() << " (seed " << seed << ")";
  // Enough work to mean something, even in the debug heap on a loaded machine.
  EXPECT_GT(stress.operations(), 10000u);
}

}  // namespace
