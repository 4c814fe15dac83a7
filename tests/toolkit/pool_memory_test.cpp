// What a Pool<T> spends beside its slots, what it and FixedPool do without memory, FixedPool
// beside memory it did not place, and what a PoolResource keeps when its bookkeeping runs out
// of memory, by replacing the global operator new and delete (in an executable of its own,
// since the replacement holds for the whole program).
#include <poolalloc/detail/poison.hpp>  // POOLALLOC_DETAIL_ASAN
#include <poolalloc/frame_allocator.hpp>
#include <poolalloc/object_pool.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/stack_allocator.hpp>

#include <gtest/gtest.h>

#if defined(_WIN32)
#define PSAPI_VERSION 2  // QueryWorkingSetEx from kernel32, as K32QueryWorkingSetEx
#include <windows.h>
// psapi.h needs windows.h before it
#include <psapi.h>
#else
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory_resource>
#include <new>
#include <utility>
#include <vector>

namespace {

// The bytes asked of operator new and not yet given back: each block carries its size (and the
// alignment it was taken with) in a header of kHeader bytes in front of it.
std::size_t live_bytes = 0;
constexpr std::size_t kHeader = 2 * sizeof(std::size_t);

// The allocation that many allocations from now fails (1: the next one); 0: none fails.
std::size_t fail_in = 0;

// When set, where the next aligned nothrow allocation goes (in `arena`, which is never given
// back), so that a test knows what memory follows it.
std::byte* place_next = nullptr;
alignas(64) std::byte arena[4096];

// The header holds the size and the block's distance from what malloc returned: an aligned
// start is found inside a larger block, as Windows has no posix_memalign.
void* take(std::size_t bytes, std::size_t alignment) {
  if (fail_in != 0 && --fail_in == 0) return nullptr;
  alignment = std::max(alignment, kHeader);
  auto* base = static_cast<std::byte*>(std::malloc(2 * alignment + bytes));
  if (base == nullptr) return nullptr;
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  auto* block = base + ((address + alignment - 1) & ~(alignment - 1)) - address + alignment;
  reinterpret_cast<std::size_t*>(block)[-1] = bytes;
  reinterpret_cast<std::size_t*>(block)[-2] = static_cast<std::size_t>(block - base);
  live_bytes += bytes;
  return block;
}

// Not inlined into the replaced operator delete: g++ would then see the header read in front of
// an object it knows the start of, and warn (-Warray-bounds, -Wmismatched-new-delete).
[[gnu::noinline]] void give(void* p) {
  if (p == nullptr) return;
  if (reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(arena) < sizeof arena)
    return;
  auto* block = static_cast<std::byte*>(p);
  live_bytes -= reinterpret_cast<std::size_t*>(block)[-1];
  std::free(block - reinterpret_cast<std::size_t*>(block)[-2]);
}

}  // namespace

void* operator new(std::size_t bytes) {
  if (void* p = take(bytes, 0)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  if (void* p = take(bytes, static_cast<std::size_t>(alignment))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  return take(bytes, 0);
}
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  if (place_next != nullptr) return std::exchange(place_next, nullptr);
  return take(bytes, static_cast<std::size_t>(alignment));
}
void operator delete(void* p) noexcept {
  give(p);
}
void operator delete(void* p, std::size_t) noexcept {
  give(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  give(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  give(p);
}

namespace {

using poolalloc::DebugChecks;
using poolalloc::FixedPool;
using poolalloc::Growth;
using poolalloc::Pool;

struct Particle {
  float position[3];
  float life;
};

// Beside its slots (slot_bytes() each: the object and its 8-byte stamp), 4 bytes and one bit per
// slot (the slot of each id, the bitmap), and a few words per chunk (its entry in the pool's list
// of chunks, the bitmap's summary and sentinel words); a pool grown in chunks apart one bit per
// slot more (the base of each 64-slot word's chunk) and a word.
enum class Slots { one_run, chunks_apart };
std::size_t promised_beside_the_slots(std::size_t slots, std::size_t chunks, Slots where) {
  const std::size_t table = where == Slots::chunks_apart ? slots / 8 + 8 : 0;
  return 4 * slots + slots / 8 + table + 64 * chunks;
}

constexpr std::byte kUntouched{0xEE};

// Whether the bytes [begin, end) still hold kUntouched.
bool untouched(const std::byte* begin, const std::byte* end) {
  return std::all_of(begin, end, [](std::byte b) { return b == kUntouched; });
}

// Creation is O(1) in the slots, as FixedPool's in its blocks: no page of them is touched until a
// slot is used, when the slot's stamp is written (and, with debug checks, its fill pattern).
void expect_creation_touches_no_slot(DebugChecks debug) {
  std::fill(std::begin(arena), std::end(arena), kUntouched);
  constexpr std::size_t kSlots = sizeof arena / Pool<Particle>::slot_bytes();
  place_next = arena;
  Pool<Particle> pool(kSlots, Growth::fixed, debug);
  ASSERT_EQ(place_next, nullptr);
  ASSERT_EQ(pool.capacity(), kSlots);
  EXPECT_TRUE(untouched(std::begin(arena), std::end(arena)));
  Particle* first = pool.spawn();
  ASSERT_EQ(static_cast<void*>(first), static_cast<void*>(arena));
  EXPECT_TRUE(untouched(arena + Pool<Particle>::slot_bytes(), std::end(arena)));
}

TEST(PoolMemory, CreationTouchesNoSlot) {
  expect_creation_touches_no_slot(DebugChecks::off);
}

// Debug checks fill a slot when it gets its stamp, not at creation: a pool of 2^25 slots took
// 518 MiB and 231 ms to create with them, 6 MiB and 33 ms without.
TEST(PoolMemory, CreationTouchesNoSlotWithDebugChecksEither) {
  expect_creation_touches_no_slot(DebugChecks::on);
}

TEST(PoolMemory, GrowthFromNewTouchesNoSlotOfTheNewChunk) {
  Pool<Particle> pool(64, Growth::growable_from_new);
  for (int i = 0; i < 64; ++i) ASSERT_NE(pool.spawn(), nullptr);
  std::fill(std::begin(arena), std::end(arena), kUntouched);
  ASSERT_LE(64 * Pool<Particle>::slot_bytes(), sizeof arena);
  place_next = arena;
  ASSERT_TRUE(pool.reserve(128));
  ASSERT_EQ(place_next, nullptr);
  ASSERT_EQ(pool.capacity(), 128u);
  EXPECT_TRUE(untouched(std::begin(arena), std::end(arena)));
  Particle* first = pool.spawn();
  ASSERT_EQ(static_cast<void*>(first), static_cast<void*>(arena));
  EXPECT_TRUE(untouched(arena + Pool<Particle>::slot_bytes(), std::end(arena)));
}

// The pages of [begin, end) that are resident (have memory): by mincore(2) on POSIX, by the
// process's working set on Windows.
std::size_t resident_pages(const void* begin, const void* end) {
#if defined(_WIN32)
  constexpr std::uintptr_t page = 4096;
#else
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
#endif
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(begin) / page * page;
  const std::uintptr_t last = reinterpret_cast<std::uintptr_t>(end);
  const std::size_t pages = (last - first + page - 1) / page;
#if defined(_WIN32)
  std::vector<PSAPI_WORKING_SET_EX_INFORMATION> states(pages);
  for (std::size_t i = 0; i < pages; ++i) {
    states[i].VirtualAddress = reinterpret_cast<void*>(first + i * page);
  }
  if (!QueryWorkingSetEx(GetCurrentProcess(), states.data(),
                         static_cast<DWORD>(pages * sizeof(states[0])))) {
    return SIZE_MAX;
  }
  return static_cast<std::size_t>(
      std::count_if(states.begin(), states.end(),
                    [](const auto& state) { return state.VirtualAttributes.Valid; }));
#else
  std::vector<unsigned char> states(pages);
  if (mincore(reinterpret_cast<void*>(first), last - first, states.data()) != 0) return SIZE_MAX;
  return static_cast<std::size_t>(std::count_if(
      states.begin(), states.end(), [](unsigned char state) { return (state & 1) != 0; }));
#endif
}

// A growable pool's slots lie in address space that it reserved: creating it with a million slots
// and growing it to two gives none of their pages memory; a spawn gives memory to the pages of the
// slot it takes.
TEST(PoolMemory, GrowthTouchesNoSlotOfTheNewChunk) {
  Pool<Particle> pool(1'000'000, Growth::growable);
  ASSERT_TRUE(pool.reserve(2'000'000));
  ASSERT_EQ(pool.chunk_count(), 2u);
  Particle* first = pool.spawn();
  const std::byte* slots = reinterpret_cast<const std::byte*>(first);
  const std::byte* end = slots + pool.capacity() * pool.slot_bytes();
  EXPECT_LE(resident_pages(slots, end), 1u);
  for (std::size_t i = 1; i < 1'000'001; ++i) ASSERT_NE(pool.spawn(), nullptr);
  const std::byte* grown = slots + 1'000'001 * pool.slot_bytes();  // the slot past the first chunk
  EXPECT_LE(resident_pages(grown, end), 1u);
  // Not a measure that tells nothing: the pages of the slots spawned have memory.
  EXPECT_GE(resident_pages(slots, grown), 1'000'000 * pool.slot_bytes() / 4096 / 2);
}

// shrink() gives the pages of the chunks it takes away back to the system.
TEST(PoolMemory, ShrinkGivesTheRangesPagesBackToTheSystem) {
  Pool<Particle> pool;
  std::vector<Particle*> objects;
  for (int i = 0; i < 100'000; ++i) objects.push_back(pool.spawn());
  const std::byte* slots = reinterpret_cast<const std::byte*>(objects[0]);
  const std::byte* end = slots + pool.capacity() * pool.slot_bytes();
  const std::byte* past_first = slots + 64 * pool.slot_bytes();  // the first chunk stays
  ASSERT_GT(resident_pages(past_first, end), 500u);
  for (Particle* object : objects) pool.despawn(object);
  EXPECT_GT(pool.shrink(), 0u);
  ASSERT_EQ(pool.capacity(), 64u);
  EXPECT_LE(resident_pages(past_first, end), 1u);
}

TEST(PoolMemory, ASlotIsTheObjectAndAnEightByteStampRoundedUpToItsAlignmentAndToEight) {
  static_assert(Pool<Particle>::slot_bytes() == sizeof(Particle) + 8);
  static_assert(Pool<char>::slot_bytes() == 16);  // 9, rounded up to the stamp's 8
  struct ThreeInts {
    int values[3];
  };
  static_assert(Pool<ThreeInts>::slot_bytes() == 24);
  struct alignas(64) Line {
    char bytes[64];
  };
  static_assert(Pool<Line>::slot_bytes() == 128);
  struct Entity {
    float values[16];
  };
  static_assert(Pool<Entity>::slot_bytes() == 72);
  Pool<Particle> pool(3);
  Particle* first = pool.spawn();
  Particle* second = pool.spawn();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(second) - reinterpret_cast<std::uintptr_t>(first),
            Pool<Particle>::slot_bytes());
}

// Tables grown by doubling to 16,384 entries would spend 6.6 bytes more per slot of a pool of
// 10,000.
TEST(PoolMemory, SpendsFourBytesAndOneBitPerSlotBesideItsSlots) {
  const std::size_t before = live_bytes;
  Pool<Particle> pool(10000);
  ASSERT_EQ(pool.capacity(), 10000u);
  const std::size_t beside = live_bytes - before - pool.capacity() * pool.slot_bytes();
  EXPECT_GE(beside, 4u * 10000);
  EXPECT_LE(beside, promised_beside_the_slots(10000, 1, Slots::one_run));
}

TEST(PoolMemory, ADefaultConstructedPoolHoldsNoMemoryUntilItsFirstSpawn) {
  const std::size_t before = live_bytes;
  Pool<Particle> pool;
  EXPECT_EQ(live_bytes, before);
  EXPECT_EQ(pool.capacity(), 0u);
  ASSERT_NE(pool.spawn(), nullptr);
  EXPECT_EQ(pool.capacity(), 64u);
  EXPECT_GT(live_bytes, before);
}

TEST(PoolMemory, APoolGrownFromNewSpendsFourBytesAndTwoBitsPerSlotBesideItsSlots) {
  const std::size_t before = live_bytes;
  Pool<Particle> pool(100, Growth::growable_from_new);
  for (int i = 0; i < 10000; ++i) ASSERT_NE(pool.spawn(), nullptr);
  ASSERT_EQ(pool.capacity(), 16384u);  // 100, then up to 256, 512, ... 16384
  const std::size_t beside = live_bytes - before - pool.capacity() * pool.slot_bytes();
  EXPECT_LE(beside,
            promised_beside_the_slots(pool.capacity(), pool.chunk_count(), Slots::chunks_apart));
}

// Its slots lie in its reserved range, not in operator new's memory, and in one run: no table of
// chunk bases.
TEST(PoolMemory, AGrownPoolSpendsFourBytesAndOneBitPerSlotBesideItsSlots) {
  const std::size_t before = live_bytes;
  Pool<Particle> pool(100, Growth::growable);
  for (int i = 0; i < 10000; ++i) ASSERT_NE(pool.spawn(), nullptr);
  ASSERT_EQ(pool.capacity(), 16384u);
  EXPECT_LE(live_bytes - before,
            promised_beside_the_slots(pool.capacity(), pool.chunk_count(), Slots::one_run));
}

// Whether `pool`'s first spawn took its slots from operator new.
template <class Pool>
bool spawn_takes_slots_from_new(Pool& pool) {
  const std::size_t before = live_bytes;
  EXPECT_NE(pool.spawn(), nullptr);
  return live_bytes - before >= 64 * pool.slot_bytes();
}

// The reserved ranges of a process hold 1 TiB at most, 1,024 pools: the others grow in chunks from
// operator new, until a pool with a range goes, which gives its range back.
TEST(PoolMemory, AtMost1024GrowablePoolsReserveTheirRangeAtOnce) {
  std::vector<Pool<Particle>> pools(1100);
  std::size_t from_new = 0;
  for (Pool<Particle>& pool : pools) from_new += spawn_takes_slots_from_new(pool) ? 1 : 0;
  EXPECT_GE(from_new, 1100u - 1024u);
  pools.clear();
  Pool<Particle> later;
  EXPECT_FALSE(spawn_takes_slots_from_new(later));
}

// A pool takes a range only for a first chunk that fits in it: one that cannot use a range leaves
// it to another pool.
TEST(PoolMemory, AGrowablePoolWhoseFirstChunkDoesNotFitARangeTakesNone) {
  std::vector<Pool<Particle>> pools(1024);
  for (Pool<Particle>& pool : pools) ASSERT_FALSE(spawn_takes_slots_from_new(pool));
  pools.pop_back();  // one range left
  constexpr std::size_t kPastARange =
      poolalloc::detail::AddressRange::kBytes / Pool<Particle>::slot_bytes() + 1;
  Pool<Particle> large(kPastARange, Growth::growable);
  ASSERT_EQ(large.capacity(), kPastARange);
  Pool<Particle> small;
  EXPECT_FALSE(spawn_takes_slots_from_new(small));
}

// A range starts at a page: slots aligned to more than 4096 bytes come from operator new.
TEST(PoolMemory, AGrowablePoolOfSlotsAlignedToMoreThan4096BytesGrowsFromNew) {
  struct alignas(8192) Aligned {
    char bytes[8192];
  };
  Pool<Aligned> pool;
  EXPECT_TRUE(spawn_takes_slots_from_new(pool));
}

#if !defined(_WIN32)
// A reservation would count against RLIMIT_AS (ulimit -v) and take what malloc may need: where the
// address space is limited, a growable pool takes its slots from operator new.
TEST(PoolMemory, WhereTheAddressSpaceIsLimitedAGrowablePoolGrowsFromNew) {
  EXPECT_EXIT(
      {
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? RLIM_INFINITY - 1 : limit.rlim_max;
        setrlimit(RLIMIT_AS, &limit);
        Pool<Particle> pool;
        std::_Exit(spawn_takes_slots_from_new(pool) ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}
#endif

#if defined(__linux__) && !defined(POOLALLOC_DETAIL_ASAN)
// What /proc/self/status says of the process's data (VmData), in bytes.
std::size_t data_bytes() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  std::size_t kib = 0;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::sscanf(line, "VmData: %zu kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib * 1024;
}

// Lowers RLIMIT_DATA to what the process has: the range's pages can no longer be made writable
// (mprotect to writable counts against it on Linux). False where it cannot.
bool refuse_more_data() {
  rlimit limit{};
  getrlimit(RLIMIT_DATA, &limit);
  limit.rlim_cur = data_bytes();
  return limit.rlim_cur != 0 && setrlimit(RLIMIT_DATA, &limit) == 0;
}

// Where the system refuses the range's pages, the chunk comes from operator new: here from
// `arena`, which the replaced operator new hands out without malloc (128 slots of 24 bytes fill
// the range's first page; the next 128 need its second). So do the chunks after it, which would
// not follow the pool's slots in the range.
TEST(PoolMemory, AChunkWhoseRangePagesTheSystemRefusesComesFromNew) {
  EXPECT_EXIT(
      {
        Pool<Particle> pool(128, Growth::growable);
        for (int i = 0; i < 128; ++i) {
          if (pool.spawn() == nullptr) std::_Exit(2);
        }
        rlimit before{};
        getrlimit(RLIMIT_DATA, &before);
        if (!refuse_more_data()) std::_Exit(3);
        place_next = arena;
        const Particle* grown = pool.spawn();
        const bool from_new = place_next == nullptr && static_cast<const void*>(grown) == arena;
        if (!from_new || pool.capacity() != 256) std::_Exit(1);
        setrlimit(RLIMIT_DATA, &before);
        for (int i = 129; i < 256; ++i) {
          if (pool.spawn() == nullptr) std::_Exit(2);
        }
        const std::size_t bytes = live_bytes;
        if (pool.spawn() == nullptr) std::_Exit(2);
        std::_Exit(live_bytes - bytes >= 256 * pool.slot_bytes() ? 0 : 4);
      },
      testing::ExitedWithCode(0), "");
}

// The reserved ranges of 1 GiB in /proc/self/maps.
int ranges_mapped() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  char line[512];
  int ranges = 0;
  unsigned long begin = 0;
  unsigned long end = 0;
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::sscanf(line, "%lx-%lx", &begin, &end) == 2 &&
        end - begin == poolalloc::detail::AddressRange::kBytes)
      ++ranges;
  }
  std::fclose(maps);
  return ranges;
}

// A first chunk whose pages the system refuses comes from operator new, and the pool gives its
// range back, which no later chunk could use.
TEST(PoolMemory, AGrowablePoolWhoseFirstChunkTheSystemRefusesGivesItsRangeBack) {
  EXPECT_EXIT(
      {
        const int before = ranges_mapped();
        if (!refuse_more_data()) std::_Exit(3);
        place_next = arena;
        Pool<Particle> pool(128, Growth::growable);
        if (place_next != nullptr || pool.capacity() != 128) std::_Exit(1);
        std::_Exit(ranges_mapped() == before ? 0 : 4);
      },
      testing::ExitedWithCode(0), "");
}
#endif

// Fails each allocation of the pool's in turn, the first (its slots) to the last (its tables), and
// finds the pool all or nothing: no exception, no memory kept.
TEST(PoolMemory, APoolThatCannotHaveItsMemoryHasCapacityZeroAndKeepsNone) {
  for (std::size_t failing = 1;; ++failing) {
    const std::size_t before = live_bytes;
    fail_in = failing;
    {
      Pool<Particle> pool(1000);
      const bool failed = fail_in == 0;
      fail_in = 0;
      if (!failed) {
        EXPECT_EQ(pool.capacity(), 1000u);
        EXPECT_GT(failing, 1u);
        break;
      }
      EXPECT_EQ(pool.capacity(), 0u) << "allocation " << failing << " failed";
      EXPECT_EQ(pool.spawn(), nullptr);
    }
    EXPECT_EQ(live_bytes, before) << "allocation " << failing << " failed";
  }
}

TEST(PoolMemory, AGrowablePoolThatCannotGrowReturnsNullptrAndGrowsLater) {
  for (std::size_t failing = 1;; ++failing) {
    const std::size_t before = live_bytes;
    {
      Pool<Particle> pool(64, Growth::growable);
      for (int i = 0; i < 64; ++i) ASSERT_NE(pool.spawn(), nullptr);
      fail_in = failing;
      Particle* spawned = pool.spawn();
      const bool failed = fail_in == 0;
      fail_in = 0;
      if (!failed) {
        EXPECT_NE(spawned, nullptr);
        EXPECT_GT(failing, 1u);
        break;
      }
      EXPECT_EQ(spawned, nullptr) << "allocation " << failing << " failed";
      EXPECT_EQ(pool.capacity(), 64u);
      EXPECT_NE(pool.spawn(), nullptr);  // the memory is there again
      EXPECT_EQ(pool.capacity(), 128u);
      EXPECT_EQ(pool.size(), 65u);
    }
    EXPECT_EQ(live_bytes, before) << "allocation " << failing << " failed";
  }
}

// Fails each allocation of a growth in turn, the chunk's memory first, then the pool's list of
// chunks and (with debug checks) its bits: allocate() returns nullptr, throws nothing and keeps
// nothing, and the pool goes on.
void expect_growth_all_or_nothing(DebugChecks debug) {
  for (std::size_t failing = 1;; ++failing) {
    const std::size_t before = live_bytes;
    {
      FixedPool pool(64, 1, 16, Growth::growable, debug);
      pool.set_leak_report(poolalloc::LeakReport::off);
      void* first = pool.allocate();
      ASSERT_NE(first, nullptr);
      fail_in = failing;
      void* grown = pool.allocate();
      const bool failed = fail_in == 0;
      fail_in = 0;
      if (!failed) {
        EXPECT_NE(grown, nullptr);
        EXPECT_GT(failing, 1u);
        break;
      }
      EXPECT_EQ(grown, nullptr) << "allocation " << failing << " failed";
      EXPECT_EQ(pool.capacity(), 1u);
      EXPECT_EQ(pool.chunk_count(), 1u);
      void* later = pool.allocate();  // the memory is there again
      EXPECT_NE(later, nullptr);
      EXPECT_EQ(pool.capacity(), 2u);
      pool.deallocate(later);
      pool.deallocate(first);
    }
    EXPECT_EQ(live_bytes, before) << "allocation " << failing << " failed";
  }
}

TEST(FixedPoolMemory, AGrowthWithoutMemoryReturnsNullptrKeepsNothingAndTheNextOneGrows) {
  expect_growth_all_or_nothing(DebugChecks::off);
}

TEST(FixedPoolMemory, UnderDebugChecksAGrowthWithoutMemoryReturnsNullptrAndTheNextOneGrows) {
  expect_growth_all_or_nothing(DebugChecks::on);
}

TEST(FixedPoolMemory, CreateWithoutMemoryReturnsFalseAndKeepsNone) {
  for (const DebugChecks debug : {DebugChecks::off, DebugChecks::on}) {
    for (std::size_t failing = 1;; ++failing) {
      const std::size_t before = live_bytes;
      {
        FixedPool pool;
        fail_in = failing;
        const bool created = pool.create(64, 1000, 16, Growth::fixed, debug);
        const bool failed = fail_in == 0;
        fail_in = 0;
        if (!failed) {
          EXPECT_TRUE(created);
          EXPECT_GT(failing, 1u);
          break;
        }
        EXPECT_FALSE(created) << "allocation " << failing << " failed";
        EXPECT_EQ(pool.capacity(), 0u);
        EXPECT_EQ(pool.allocate(), nullptr);
      }
      EXPECT_EQ(live_bytes, before) << "allocation " << failing << " failed";
    }
  }
}

// With debug checks a chunk of the pool's own has guard bytes around each block: the caller's
// memory that follows it is not the chunk's, however close.
TEST(FixedPoolDebug, BlocksOfCallerMemoryRightAfterAChunkOfThePoolsOwnAreDeallocated) {
  const std::size_t chunk_bytes = 2 * poolalloc::detail::block_layout(48, 16, true)->stride;
  place_next = arena;
  FixedPool pool(48, 2, 16, Growth::fixed, DebugChecks::on);
  ASSERT_EQ(place_next, nullptr);
  ASSERT_TRUE(pool.grow(arena + chunk_bytes, 1024));
  std::vector<void*> blocks;
  while (void* block = pool.allocate()) blocks.push_back(block);
  ASSERT_EQ(blocks.size(), pool.capacity());
  for (void* block : blocks) EXPECT_TRUE(pool.owns(block));
  for (void* block : blocks) pool.deallocate(block);
  EXPECT_EQ(pool.used_count(), 0u);
}

// Counts the blocks it holds out; takes them from malloc, not from the operator new under test.
class MallocResource final : public std::pmr::memory_resource {
 public:
  int live = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t) override {
    ++live;
    return std::malloc(bytes);
  }
  void do_deallocate(void* p, std::size_t, std::size_t) override {
    --live;
    std::free(p);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

TEST(PoolResourceMemory, AnUpstreamRequestWhoseRecordCannotBeKeptThrowsAndKeepsNoBlock) {
  MallocResource upstream;
  poolalloc::PoolResource resource(256, 64, &upstream);
  fail_in = 1;  // the record of the upstream block
  EXPECT_THROW((void)resource.allocate(1000), std::bad_alloc);
  fail_in = 0;
  EXPECT_EQ(upstream.live, 0);
  EXPECT_EQ(resource.used(), 0u);
  void* p = resource.allocate(1000);  // and it serves the next request
  EXPECT_EQ(upstream.live, 1);
  resource.deallocate(p, 1000);
  EXPECT_EQ(upstream.live, 0);
}

// The convention of every arena: an allocator whose memory cannot be had has capacity 0 and
// allocates nullptr, and keeps nothing; a double-buffered one keeps neither frame.
TEST(FrameMemory, AFrameOrStackAllocatorWithoutItsMemoryHasCapacityZeroAndKeepsNone) {
  const std::size_t before = live_bytes;
  fail_in = 1;
  poolalloc::FrameAllocator frame(1024);
  EXPECT_EQ(fail_in, 0u);
  EXPECT_EQ(frame.capacity(), 0u);
  EXPECT_EQ(frame.allocate(1), nullptr);
  fail_in = 1;
  poolalloc::StackAllocator stack(1024);
  EXPECT_EQ(stack.capacity(), 0u);
  EXPECT_EQ(stack.allocate(1), nullptr);
  EXPECT_EQ(live_bytes, before);
  for (std::size_t failing : {1, 2}) {
    fail_in = failing;
    poolalloc::DoubleBufferedFrameAllocator frames(1024);
    EXPECT_EQ(fail_in, 0u);
    for (int frame_number = 0; frame_number < 2; ++frame_number) {
      EXPECT_EQ(frames.capacity(), 0u) << "allocation " << failing << " failed";
      EXPECT_EQ(frames.allocate(1), nullptr);
      frames.swap_buffers();
    }
    EXPECT_EQ(live_bytes, before) << "allocation " << failing << " failed";
  }
}

// A PoolResource takes no memory until it is asked for some: its construction cannot fail for
// want of it.
TEST(PoolResourceMemory, ConstructionTakesNoMemory) {
  fail_in = 1;
  poolalloc::PoolResource resource;
  EXPECT_EQ(fail_in, 1u);
  fail_in = 0;
  resource.deallocate(resource.allocate(8), 8);
}

}  // namespace
