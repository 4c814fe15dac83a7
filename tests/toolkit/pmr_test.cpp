#include <poolalloc/node_size.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/synchronized.hpp>
#include <poolalloc/tracking.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <memory_resource>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using poolalloc::DoubleBufferedFrameAllocator;
using poolalloc::FixedPool;
using poolalloc::FrameAllocator;
using poolalloc::FrameResource;
using poolalloc::PoolResource;
using poolalloc::StackAllocator;
using poolalloc::StackResource;
using poolalloc::StlAllocator;

// Counts what reaches the upstream resource.
class CountingResource final : public std::pmr::memory_resource {
 public:
  int allocations = 0;
  int deallocations = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    ++allocations;
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    ++deallocations;
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const memory_resource& other) const noexcept override { return this == &other; }
};

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

TEST(PoolResource, ServesSmallRequestsFromPoolsAndLargeOnesUpstream) {
  CountingResource upstream;
  PoolResource pool(256, 16, &upstream);
  void* small = pool.allocate(24, 8);
  void* medium = pool.allocate(256, 16);
  EXPECT_EQ(upstream.allocations, 0);
  void* large = pool.allocate(257, 8);
  EXPECT_EQ(upstream.allocations, 1);
  EXPECT_EQ(pool.used(), 24u + 256u + 257u);
  pool.deallocate(large, 257, 8);
  EXPECT_EQ(upstream.deallocations, 1);
  pool.deallocate(medium, 256, 16);
  pool.deallocate(small, 24, 8);
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_EQ(pool.upstream(), &upstream);
}

TEST(PoolResource, DefaultsToPoolsOf8To256BytesOf64BlocksOverTheDefaultResource) {
  PoolResource pool;
  pool.set_name("ui");
  EXPECT_EQ(pool.largest_block(), 256u);
  EXPECT_EQ(pool.upstream(), std::pmr::get_default_resource());
  void* smallest = pool.allocate(1, 1);
  void* largest = pool.allocate(256, 8);
  void* upstream = pool.allocate(257, 8);
  EXPECT_FALSE(pool.debug_checks());
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(),
            "PoolResource \"ui\": 514 B used, 17153 B reserved, 8 B blocks 1 of 64, 256 B blocks "
            "1 of 64, 1 block upstream, debug checks off");
  pool.deallocate(upstream, 257, 8);
  pool.deallocate(largest, 256, 8);
  pool.deallocate(smallest, 1, 1);
}

// Up to 128 bytes, a request takes the next multiple of 8 bytes (of 16 where it asks for 16),
// aligned to 16 where that is a multiple of 16; more aligned requests take a power of two.
TEST(PoolResource, ServesRequestsUpTo128BytesFromBlocksOf8ByteSteps) {
  PoolResource pool(256, 4);
  pool.set_name("ui");
  void* forty = pool.allocate(40, 8);
  void* forty_aligned = pool.allocate(40, 16);
  void* eight = pool.allocate(3, 8);
  void* hundred_twenty_eight = pool.allocate(121, 8);
  void* over_aligned = pool.allocate(40, 64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(forty) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(forty_aligned) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(over_aligned) % 64, 0u);
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(),
            "PoolResource \"ui\": 244 B used, 1152 B reserved, 8 B blocks 1 of 4, 40 B blocks 1 of "
            "4, 48 B blocks 1 of 4, 64 B blocks 1 of 4, 128 B blocks 1 of 4, 0 blocks upstream, "
            "debug checks off");
  pool.deallocate(over_aligned, 40, 64);
  pool.deallocate(hundred_twenty_eight, 121, 8);
  pool.deallocate(eight, 3, 8);
  pool.deallocate(forty_aligned, 40, 16);
  pool.deallocate(forty, 40, 8);
  EXPECT_EQ(pool.used(), 0u);
}

// A std::pmr::map's nodes (40 bytes under libstdc++ on x86-64) take blocks of their own size.
TEST(PoolResource, AMapsNodesTakeBlocksOfTheirOwnSize) {
  using Map = std::pmr::map<int, int>;
  PoolResource pool(256, 64);
  {
    Map map(&pool);
    for (int key = 0; key < 100; ++key) map.emplace(key, key);
    const std::size_t node = poolalloc::node_layout<Map>().size;
    EXPECT_EQ(pool.reserved(), (node + 7) / 8 * 8 * 128);  // chunks of 64 and 64 blocks
  }
  EXPECT_EQ(pool.used(), 0u);
}

// Through the resource too, the block given back last is the next one handed out, though the
// blocks go back in a random order over the chunks of a grown pool.
TEST(PoolResource, TheBlockGivenBackLastIsTheNextOneHandedOut) {
  PoolResource pool(256, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 300; ++i) blocks.push_back(pool.allocate(24, 8));
  const unsigned seed = 3;
  std::printf("seed %u\n", seed);
  std::mt19937 random(seed);
  std::shuffle(blocks.begin(), blocks.end(), random);
  for (void*& block : blocks) {
    void* given_back = block;
    pool.deallocate(given_back, 24, 8);
    block = pool.allocate(24, 8);
    ASSERT_EQ(block, given_back);
  }
  for (void* block : blocks) pool.deallocate(block, 24, 8);
  EXPECT_EQ(pool.used(), 0u);
}

// A block given back waits on its size's stack, counted as free, and is the next one of that size
// handed out; the pool is asked only for blocks never handed out, so refilling grows nothing.
TEST(PoolResource, ABlockGivenBackIsFreeUntilItIsTheNextOfItsSizeHandedOut) {
  PoolResource pool(64, 4);
  pool.set_name("ui");
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.allocate(16, 8));
  pool.deallocate(blocks[1], 16, 8);
  pool.deallocate(blocks[4], 16, 8);
  std::ostringstream two_free;
  two_free << pool;
  EXPECT_EQ(two_free.str(),
            "PoolResource \"ui\": 48 B used, 128 B reserved, 16 B blocks 3 of 8, 0 blocks "
            "upstream, debug checks off");
  EXPECT_EQ(pool.allocate(16, 8), blocks[4]);
  EXPECT_EQ(pool.allocate(16, 8), blocks[1]);
  for (int i = 5; i < 8; ++i) blocks.push_back(pool.allocate(16, 8));
  EXPECT_EQ(pool.reserved(), 128u);  // the 8 blocks of the two chunks, each handed out once
  for (void* block : blocks) pool.deallocate(block, 16, 8);
  for (int i = 0; i < 8; ++i) blocks[i] = pool.allocate(16, 8);
  EXPECT_EQ(pool.reserved(), 128u);
  for (int i = 0; i < 8; ++i) pool.deallocate(blocks[i], 16, 8);
  EXPECT_EQ(pool.used(), 0u);
}

// The fast paths serve the steps up to the largest block only: under 128 bytes, a larger or more
// aligned request goes upstream.
TEST(PoolResource, ALargestBlockUnder128BytesSendsLargerOrMoreAlignedRequestsUpstream) {
  CountingResource upstream;
  PoolResource pool(8, 4, &upstream);
  void* pooled = pool.allocate(8, 8);
  EXPECT_EQ(upstream.allocations, 0);
  void* more_aligned = pool.allocate(8, 16);
  void* larger = pool.allocate(9, 8);
  EXPECT_EQ(upstream.allocations, 2);
  EXPECT_TRUE(aligned(more_aligned, 16));
  pool.deallocate(more_aligned, 8, 16);
  pool.deallocate(larger, 9, 8);
  EXPECT_EQ(upstream.deallocations, 2);
  pool.deallocate(pooled, 8, 8);
  EXPECT_EQ(pool.used(), 0u);
}

TEST(PoolResource, CreatesEachPoolOnFirstUseAndDoublesItWhenFull) {
  PoolResource pool(64, 4);
  pool.set_name("ui");
  std::ostringstream empty;
  empty << pool;
  EXPECT_EQ(empty.str(),
            "PoolResource \"ui\": 0 B used, 0 B reserved, 0 blocks upstream, debug checks off");
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(pool.allocate(16, 8));
  std::ostringstream grown;
  grown << pool;
  EXPECT_EQ(grown.str(),
            "PoolResource \"ui\": 80 B used, 128 B reserved, 16 B blocks 5 of 8, 0 blocks "
            "upstream, debug checks off");
  for (void* block : blocks) pool.deallocate(block, 16, 8);
}

TEST(PoolResource, ReusesBlocksOfTheSameSize) {
  PoolResource pool;
  void* a = pool.allocate(40);
  pool.deallocate(a, 40);
  EXPECT_EQ(pool.allocate(33), a);  // 33 and 40 bytes share the 64-byte pool
}

TEST(PoolResource, HonoursAlignmentAndSendsOverAlignedRequestsUpstream) {
  CountingResource upstream;
  PoolResource pool(128, 8, &upstream);
  void* p = pool.allocate(8, 64);
  EXPECT_TRUE(aligned(p, 64));
  EXPECT_EQ(upstream.allocations, 0);
  void* q = pool.allocate(8, 4096);
  EXPECT_TRUE(aligned(q, 4096));
  EXPECT_EQ(upstream.allocations, 1);
  pool.deallocate(q, 8, 4096);
  pool.deallocate(p, 8, 64);
  EXPECT_EQ(upstream.deallocations, 1);
}

TEST(PoolResource, ZeroByteRequestsGetDistinctPointers) {
  PoolResource pool;
  void* a = pool.allocate(0, 1);
  void* b = pool.allocate(0, 1);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0, 1);
  pool.deallocate(b, 0, 1);
}

TEST(PoolResource, ClampsItsLargestBlock) {
  EXPECT_EQ(PoolResource(1).largest_block(), PoolResource::kSmallestBlock);
  EXPECT_EQ(PoolResource(100).largest_block(), 128u);
  EXPECT_EQ(PoolResource(SIZE_MAX).largest_block(), PoolResource::kLargestBlockLimit);
}

TEST(PoolResource, BacksPmrContainersThatGrowPastAChunk) {
  PoolResource pool(256, 4);
  {
    std::pmr::vector<int> numbers(&pool);
    std::pmr::list<std::pmr::string> names(&pool);
    std::pmr::map<int, int> squares(&pool);
    for (int i = 0; i < 1000; ++i) {
      numbers.push_back(i);
      names.emplace_back("name that does not fit in the small buffer #" + std::to_string(i));
      squares[i] = i * i;
    }
    EXPECT_EQ(numbers[999], 999);
    EXPECT_EQ(names.back().substr(0, 4), "name");
    EXPECT_EQ(squares[31], 961);
  }
  EXPECT_EQ(pool.used(), 0u);
}

TEST(PoolResource, EqualsOnlyItself) {
  PoolResource a;
  PoolResource b;
  EXPECT_TRUE(a.is_equal(a));
  EXPECT_FALSE(a.is_equal(b));
}

TEST(PoolResource, RejectsChunksOfNoBlocksOrOverFourGiBWhenConstructed) {
  EXPECT_THROW(PoolResource(256, 0), std::invalid_argument);
  EXPECT_THROW(PoolResource(256, SIZE_MAX), std::length_error);
  const std::size_t most = UINT32_MAX / 256;  // 256-byte blocks in a chunk under 4 GiB
  EXPECT_THROW(PoolResource(256, most + 1), std::length_error);
  EXPECT_NO_THROW(PoolResource(256, most));  // pools are created on first use: nothing allocated
}

TEST(FrameResource, BacksAPmrVectorAndThrowsWhenTheFrameIsFull) {
  FrameAllocator frame(1024);
  FrameResource resource(frame);
  std::pmr::vector<std::uint64_t> values(&resource);
  values.reserve(64);
  for (std::uint64_t i = 0; i < 64; ++i) values.push_back(i);
  EXPECT_EQ(frame.used(), 512u);
  EXPECT_THROW(values.reserve(128), std::bad_alloc);
  EXPECT_EQ(values[63], 63u);
  EXPECT_EQ(&resource.arena(), &frame);
}

TEST(FrameResource, ServesTheCurrentFrameOfADoubleBufferedFrameAllocator) {
  DoubleBufferedFrameAllocator frames(1024);
  FrameResource per_frame(frames);
  EXPECT_EQ(&per_frame.arena(), &frames);
  std::pmr::vector<int> last({1, 2, 3}, &per_frame);
  frames.swap_buffers();
  std::pmr::vector<int> current({4, 5}, &per_frame);
  EXPECT_EQ(frames.used(), 2 * sizeof(int));
  EXPECT_EQ(last[2], 3);
  EXPECT_THROW(current.reserve(1000), std::bad_alloc);
}

TEST(FrameResource, GivesMemoryBackOnlyThroughReset) {
  FrameAllocator frame(1024);
  FrameResource resource(frame);
  {
    std::pmr::vector<int> values({1, 2, 3}, &resource);
    EXPECT_EQ(frame.used(), 3 * sizeof(int));
  }
  EXPECT_EQ(frame.used(), 3 * sizeof(int));  // the vector's deallocate gave nothing back
  frame.reset();
  EXPECT_EQ(frame.used(), 0u);
}

TEST(StackResource, GivesMemoryBackOnlyThroughFreeToMarker) {
  StackAllocator stack(1024);
  StackResource resource(stack);
  const auto marker = stack.marker();
  {
    std::pmr::vector<int> values({1, 2, 3}, &resource);
    EXPECT_EQ(stack.used(), 3 * sizeof(int));
  }
  EXPECT_EQ(stack.used(), 3 * sizeof(int));
  stack.free_to_marker(marker);
  EXPECT_EQ(stack.used(), 0u);
}

TEST(StackResource, AllocatesFromTheStackUntilFreedToAMarker) {
  StackAllocator stack(4096);
  StackResource resource(stack);
  const auto marker = stack.marker();
  {
    std::pmr::vector<int> values({1, 2, 3}, &resource);
    EXPECT_GT(stack.used(), 0u);
  }
  stack.free_to_marker(marker);
  EXPECT_EQ(stack.used(), 0u);
  EXPECT_FALSE(resource.is_equal(StackResource(stack)));
}

TEST(StlAllocator, PutsAStdVectorInAFrame) {
  FrameAllocator frame(4096);
  std::vector<int, StlAllocator<int, FrameAllocator>> values{
      StlAllocator<int, FrameAllocator>(frame)};
  values.reserve(100);
  for (int i = 0; i < 100; ++i) values.push_back(i);
  EXPECT_EQ(frame.used(), 400u);
  EXPECT_EQ(values[42], 42);
}

TEST(StlAllocator, RebindsForNodeContainersAndGivesMemoryBack) {
  PoolResource pool;
  using Allocator = StlAllocator<int, PoolResource>;
  {
    std::list<int, Allocator> values{Allocator(pool)};
    for (int i = 0; i < 100; ++i) values.push_back(i);
    EXPECT_GE(pool.used(), 100 * sizeof(int));
  }
  EXPECT_EQ(pool.used(), 0u);
}

TEST(StlAllocator, ServesNodeContainersFromAFixedPoolAndGivesTheBlocksBack) {
  FixedPool nodes(64, 16);
  using Allocator = StlAllocator<int, FixedPool>;
  {
    std::list<int, Allocator> values{Allocator(nodes)};
    for (int i = 0; i < 16; ++i) values.push_back(i);
    EXPECT_EQ(nodes.used_count(), 16u);
    EXPECT_THROW(values.push_back(16), std::bad_alloc);  // the pool is full
    values.pop_front();
    EXPECT_EQ(nodes.used_count(), 15u);
  }
  EXPECT_EQ(nodes.used_count(), 0u);
}

TEST(StlAllocator, ServesNodeContainersFromATrackedFixedPool) {
  FixedPool nodes(64, 16);
  poolalloc::Tracked tracked(nodes, 1024);
  using Allocator = StlAllocator<int, poolalloc::Tracked<FixedPool>>;
  {
    std::list<int, Allocator> values{Allocator(tracked)};
    values.push_back(1);
    values.push_back(2);
    EXPECT_EQ(tracked.used(), 2 * 64u);
  }
  EXPECT_EQ(tracked.used(), 0u);
  EXPECT_EQ(tracked.peak(), 2 * 64u);
}

TEST(StlAllocator, ServesNodeContainersFromASynchronizedFixedPool) {
  poolalloc::Synchronized<FixedPool> nodes(64, 16);
  using Allocator = StlAllocator<int, poolalloc::Synchronized<FixedPool>>;
  {
    std::list<int, Allocator> values{Allocator(nodes)};
    values.push_back(1);
    EXPECT_EQ(nodes.with_lock([](const FixedPool& pool) { return pool.used_count(); }), 1u);
  }
  EXPECT_EQ(nodes.with_lock([](const FixedPool& pool) { return pool.used_count(); }), 0u);
}

struct alignas(64) Wide {
  char bytes[64];
};

TEST(StlAllocator, OverAFixedPoolThrowsForWhatABlockCannotHold) {
  FixedPool pool(32, 8, 16);
  StlAllocator<std::uint64_t, FixedPool> words(pool);
  EXPECT_THROW((void)words.allocate(2), std::bad_alloc);  // one object at a time
  StlAllocator<char[33], FixedPool> large(pool);
  EXPECT_THROW((void)large.allocate(1), std::bad_alloc);
  StlAllocator<Wide, FixedPool> aligned(pool);
  EXPECT_THROW((void)aligned.allocate(1), std::bad_alloc);
  std::uint64_t* word = words.allocate(1);
  EXPECT_EQ(pool.used_count(), 1u);
  words.deallocate(word, 1);
  EXPECT_EQ(pool.used_count(), 0u);
}

TEST(StlAllocator, ComparesByArena) {
  FrameAllocator a(64);
  FrameAllocator b(64);
  const StlAllocator<int, FrameAllocator> on_a(a);
  const StlAllocator<double, FrameAllocator> also_on_a(on_a);
  EXPECT_TRUE(on_a == also_on_a);
  EXPECT_TRUE(on_a != (StlAllocator<int, FrameAllocator>(b)));
  EXPECT_EQ(&also_on_a.arena(), &a);
}

TEST(StlAllocator, RejectsCountsWhoseSizeOverflows) {
  FrameAllocator frame(64);
  StlAllocator<std::uint64_t, FrameAllocator> allocator(frame);
  EXPECT_THROW((void)allocator.allocate(SIZE_MAX / 4), std::bad_array_new_length);
  EXPECT_THROW((void)allocator.allocate(9), std::bad_alloc);
  EXPECT_NE(allocator.allocate(8), nullptr);
}

TEST(PoolResource, ReleaseGivesBackEveryBlockPooledAndUpstream) {
  CountingResource upstream;
  PoolResource pool(64, 4, &upstream);
  (void)pool.allocate(16, 8);
  (void)pool.allocate(1000, 8);
  (void)pool.allocate(2000, 8);
  EXPECT_EQ((upstream.allocations - upstream.deallocations), 2);
  pool.release();
  EXPECT_EQ((upstream.allocations - upstream.deallocations), 0);
  EXPECT_EQ(pool.used(), 0u);
  void* again = pool.allocate(16, 8);  // usable again
  pool.deallocate(again, 16, 8);
}

TEST(PoolResource, DestructionGivesBackWhatWasNeverDeallocated) {
  CountingResource upstream;
  {
    PoolResource pool(64, 4, &upstream);
    (void)pool.allocate(1000, 8);
    void* kept = pool.allocate(3000, 8);
    void* freed = pool.allocate(2000, 8);
    pool.deallocate(freed, 2000, 8);
    EXPECT_EQ((upstream.allocations - upstream.deallocations), 2);
    (void)kept;
  }
  EXPECT_EQ((upstream.allocations - upstream.deallocations), 0);
}

// 0 bytes and 8 bytes take two pools of 8-byte blocks, 32 bytes aligned to 8 and to 32 two of
// 32-byte blocks: the line has one entry for each size, smallest first.
TEST(PoolResource, PrintsEachBlockSizeInUseOnceSmallestFirst) {
  PoolResource pool(256, 4);
  void* zero = pool.allocate(0, 8);
  void* eight = pool.allocate(8, 8);
  void* thirty_two = pool.allocate(32, 8);
  void* thirty_two_aligned = pool.allocate(32, 32);
  void* two_hundred = pool.allocate(200, 8);
  std::ostringstream out;
  out << pool;
  EXPECT_NE(out.str().find(": 272 B used, 1344 B reserved, 8 B blocks 2 of 8, 32 B blocks 2 of 8, "
                           "256 B blocks 1 of 4, 0 blocks upstream"),
            std::string::npos)
      << out.str();
  pool.deallocate(two_hundred, 200, 8);
  pool.deallocate(thirty_two_aligned, 32, 32);
  pool.deallocate(thirty_two, 32, 8);
  pool.deallocate(eight, 8, 8);
  pool.deallocate(zero, 0, 8);
}

TEST(PoolResource, PrintsItsStateAndEachPoolInUseInOneLine) {
  PoolResource pool(64, 4);
  pool.set_name("ui");
  void* a = pool.allocate(16, 8);
  void* b = pool.allocate(100, 8);
  void* c = pool.allocate(3, 1);
  std::ostringstream out;
  out << pool;
  EXPECT_EQ(out.str(),
            "PoolResource \"ui\": 119 B used, 196 B reserved, 8 B blocks 1 of 4, 16 B blocks 1 "
            "of 4, 1 block upstream, debug checks off");
  pool.deallocate(a, 16, 8);
  pool.deallocate(b, 100, 8);
  pool.deallocate(c, 3, 1);
}

// toolkit.md's line: allocate(n) asks for alignof(std::max_align_t), so a 1-byte request takes a
// 16-byte block.
TEST(PoolResource, ASmallRequestOfTheDefaultAlignmentTakesASixteenByteBlock) {
  PoolResource ui;
  ui.set_name("ui");
  void* a = ui.allocate(1);
  void* b = ui.allocate(256);
  void* c = ui.allocate(257);
  std::ostringstream out;
  out << ui;
  EXPECT_EQ(
      out.str(),
      "PoolResource \"ui\": 514 B used, 17665 B reserved, 16 B blocks 1 of 64, 256 B blocks 1 "
      "of 64, 1 block upstream, debug checks off");
  ui.deallocate(a, 1);
  ui.deallocate(b, 256);
  ui.deallocate(c, 257);
}

TEST(PoolResource, UsedCountsTheBytesAskedForAndReservedTheBytesItHolds) {
  CountingResource upstream;
  PoolResource pool(64, 4, &upstream);
  void* small = pool.allocate(3, 1);  // an 8-byte block, in a pool of 4
  void* large = pool.allocate(100, 8);
  EXPECT_EQ(pool.used(), 103u);
  EXPECT_EQ(pool.reserved(), 4 * 8 + 100u);
  pool.deallocate(small, 3, 1);
  pool.deallocate(large, 100, 8);
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_EQ(pool.reserved(), 4 * 8u);  // the pool's chunk stays until release()
  pool.release();
  EXPECT_EQ(pool.reserved(), 0u);
}

TEST(PoolResource, PassesItsDebugChecksToItsPools) {
  PoolResource pool(64, 4, std::pmr::get_default_resource(), poolalloc::DebugChecks::on);
  EXPECT_TRUE(pool.debug_checks());
  auto* block = static_cast<unsigned char*>(pool.allocate(16, 8));
  EXPECT_EQ(block[15], 0xA5);  // a debug pool's fill
  pool.deallocate(block, 16, 8);
}

using PoolResourceDeathTest = ::testing::Test;

TEST_F(PoolResourceDeathTest, WithDebugChecksADoubleDeallocateIsReported) {
  PoolResource pool(64, 4, std::pmr::get_default_resource(), poolalloc::DebugChecks::on);
  pool.set_name("ui");
  void* block = pool.allocate(16, 8);
  pool.deallocate(block, 16, 8);
  EXPECT_DEATH(pool.deallocate(block, 16, 8), "FixedPool \"ui\" .*double free");
}

// Without debug checks, a block given back twice in a row is caught (one compare, as glibc's fast
// bins catch it), through the memory_resource as a pmr container gives it back.
TEST_F(PoolResourceDeathTest, ABlockGivenBackTwiceInARowIsReportedAsADoubleFree) {
  PoolResource pool;
  pool.set_name("ui");
  std::pmr::memory_resource& resource = pool;
  void* block = resource.allocate(40, 8);
  resource.deallocate(block, 40, 8);
  EXPECT_DEATH(resource.deallocate(block, 40, 8),
               "^poolalloc: PoolResource \"ui\": deallocate of 0x\\w+, the 40-byte block "
               "given back last: a double free\n$");
}

// A block above the largest, which the resource asked of upstream, given back twice: reported
// (upstream would take it as its own), with debug checks or without.
TEST_F(PoolResourceDeathTest, ABlockAboveTheLargestGivenBackTwiceIsReported) {
  for (const auto debug : {poolalloc::DebugChecks::off, poolalloc::DebugChecks::on}) {
    PoolResource pool(64, 4, std::pmr::get_default_resource(), debug);
    void* block = pool.allocate(1000, 8);
    pool.deallocate(block, 1000, 8);
    EXPECT_DEATH(pool.deallocate(block, 1000, 8),
                 "^poolalloc: PoolResource 0x\\w+: deallocate of 0x\\w+, above the "
                 "largest block, which it did not hand out or has taken back .a double free.\n$");
  }
}

TEST_F(PoolResourceDeathTest, WithDebugChecksAPointerNotHandedOutIsReported) {
  PoolResource pool(64, 4, std::pmr::get_default_resource(), poolalloc::DebugChecks::on);
  pool.set_name("ui");
  void* block = pool.allocate(16, 8);
  alignas(16) unsigned char elsewhere[16];
  EXPECT_DEATH(pool.deallocate(elsewhere, 16, 8), "FixedPool \"ui\" .*outside the pool");
  pool.deallocate(block, 16, 8);
}

// A move takes the pools and the blocks upstream along: blocks handed out go back through the
// resource moved into; the one moved from is empty and usable.
TEST(PoolResourceMove, BlocksStayValidAndGoBackThroughTheResourceMovedInto) {
  PoolResource resource;
  resource.set_name("ui");
  void* small = resource.allocate(24);
  void* large = resource.allocate(1000);
  PoolResource moved(std::move(resource));
  EXPECT_EQ(moved.used(), 1024u);
  EXPECT_EQ(moved.name(), "ui");
  EXPECT_EQ(resource.used(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(resource.reserved(), 0u);
  moved.deallocate(small, 24);
  moved.deallocate(large, 1000);
  EXPECT_EQ(moved.used(), 0u);
  resource.deallocate(resource.allocate(24), 24);  // usable
  PoolResource assigned(512);
  void* held = assigned.allocate(100);
  (void)held;  // given back by the assignment, as release() gives it back
  assigned = std::move(moved);
  EXPECT_EQ(assigned.largest_block(), 256u);
  EXPECT_EQ(assigned.used(), 0u);
  std::pmr::vector<int> ids(&assigned);
  ids.assign(10, 1);
  EXPECT_EQ(assigned.used(), 40u);
}

}  // namespace
