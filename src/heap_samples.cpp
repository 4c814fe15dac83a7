#include "heap_samples.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "depth_scope.hpp"
#include "lock.hpp"
#include "misuse.hpp"
#include "os.hpp"
#include "platform.hpp"
#include "sampling_math.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {
namespace {

// A live sampled allocation: its address, its stack and what it put into the stack's figures.
struct LiveSample {
  std::uintptr_t address;  // 0: a free slot
  std::uint32_t stack;
  std::uint32_t spare_class;  // the class plus one of a block that may wait as a spare, else 0
  std::int64_t objects;
  std::int64_t bytes;
};

// A freed sampled block waiting for the next sample of its class (heap_samples.hpp).
struct SpareBlock {
  void* block;
  unsigned cls;
};

// Open addressing with linear probing over a power-of-two number of slots, at most half used.
// `Slot` is a stack index plus one (stacks) or a LiveSample (live samples); 0 means free.
template <class Slot>
struct Table {
  Slot* slots = nullptr;
  std::uint32_t capacity = 0;  // slots, a power of two
  std::uint32_t used = 0;
};

// What a sample and the free of a sampled block read and write besides the tables, together in
// one page (2048 divides the page size and the whole is smaller), rather than spread over three
// pages of .bss with the deferred frees' 128 KiB between them: the scalars in two cache lines, and
// those not at the page's start, which the first line of every page-aligned block of a program
// maps to the same cache set as (bench's sweep of 16 KiB blocks: 4 times the L1 misses there).
// Under `lock` but for the atomics.
struct alignas(2048) Samples {
  SpareBlock spares[kMostSpareBlocks]{};  // the oldest first
  Lock lock;
  std::atomic<std::uint32_t> deferred_count{0};  // g_deferred_forgets's, below
  // live.used and spare_count, for frees outside the pools to read without the lock.
  std::atomic<std::uint32_t> live_count{0};
  std::atomic<std::uint32_t> spares_waiting{0};
  // The stacks, in the order they were first sampled, and an index of them by hash.
  std::uint32_t stack_count = 0;
  std::uint32_t stack_capacity = 0;
  SampledStack* stacks = nullptr;
  Table<LiveSample> live;
  Table<std::uint32_t> stack_index;
  SampleTotals totals{};
  std::uint32_t spare_count = 0;
  std::size_t spare_bytes = 0;
};
static_assert(sizeof(Samples) <= 2048, "one page");
constinit Samples g_samples;

// The calling thread's depth in sections of the samples' lock (DepthScope): a dump from a signal
// handler that interrupted one must not wait for its own thread (take_sample_snapshot).
constinit POOLALLOC_THREAD_LOCAL std::uint32_t t_sections = 0;

constexpr std::uint32_t kFirstCapacity = 1024;
constexpr std::uint64_t kGoldenRatio = 0x9e3779b97f4a7c15;

// Frees of sampled blocks that found the lock held for fork(): their addresses wait here, without
// the lock, and the next holder takes their samples out (drain_deferred_forgets). A free adds its
// address before the block goes back to glibc, so a later sample at the same address, recorded
// by a holder that drains first, is never the one taken out. While fork() holds the lock the
// program's threads run on, their small requests served by glibc: one fork of a loaded machine
// saw over a thousand sampled frees at the default mean. Past kDeferredForgets (128 KiB of
// address space, touched as used) an address is dropped and its sample stays in use.
constexpr std::uint32_t kDeferredForgets = 16384;
// Samples::deferred_count: the slots claimed so far, the first of them filled or about to be (a
// free claims, then stores).
std::atomic<std::uintptr_t> g_deferred_forgets[kDeferredForgets];

// A non-negative value to the nearest whole number (without libm's llround).
std::int64_t rounded(double value) {
  const auto whole = static_cast<std::int64_t>(value);
  return whole + (value - static_cast<double>(whole) >= 0.5 ? 1 : 0);
}

// A stack's hash: a multiply and a rotation per frame, the bits mixed once at the end (the slot
// takes the low bits). Stacks of equal hashes are told apart by their frames.
std::uint64_t hash_of(const void* const* frames, std::uint32_t depth, std::uint32_t tag) {
  std::uint64_t h = tag;
  for (std::uint32_t i = 0; i < depth; ++i)
    h = std::rotl((h ^ reinterpret_cast<std::uintptr_t>(frames[i])) * kGoldenRatio, 29);
  return mix_bits(h);
}

std::uint32_t slot_of(std::uint64_t hash, std::uint32_t capacity) {
  return static_cast<std::uint32_t>(hash) & (capacity - 1);
}

// A live address's home slot: the top bits of its product with the golden ratio (Fibonacci
// hashing), which every bit of the address below them reaches. Inline, where mix_bits is a call:
// the free of a sampled block computes it for each entry that it moves.
std::uint32_t home_of(std::uintptr_t address, std::uint32_t capacity) {
  return static_cast<std::uint32_t>((address * kGoldenRatio) >> (64 - std::countr_zero(capacity)));
}

template <class T>
T* map_array(std::uint32_t count) {
  return static_cast<T*>(os_map(std::size_t{count} * sizeof(T)));
}

template <class T>
void unmap_array(T* array, std::uint32_t count) {
  if (array != nullptr) os_unmap(array, std::size_t{count} * sizeof(T));
}

// The slot of the live table that holds `address`, or the free slot where it would go.
std::uint32_t live_slot(std::uintptr_t address) {
  std::uint32_t i = home_of(address, g_samples.live.capacity);
  while (g_samples.live.slots[i].address != 0 && g_samples.live.slots[i].address != address)
    i = (i + 1) & (g_samples.live.capacity - 1);
  return i;
}

// The slot of the stack index for this stack, or the free slot where it would go.
std::uint32_t stack_slot(std::uint64_t hash, const void* const* frames, std::uint32_t depth,
                         std::uint32_t tag) {
  std::uint32_t i = slot_of(hash, g_samples.stack_index.capacity);
  while (g_samples.stack_index.slots[i] != 0) {
    const SampledStack& s = g_samples.stacks[g_samples.stack_index.slots[i] - 1];
    if (s.hash == hash && s.depth == depth && s.tag == tag &&
        std::equal(frames, frames + depth, s.frames))
      return i;
    i = (i + 1) & (g_samples.stack_index.capacity - 1);
  }
  return i;
}

// Doubles whichever table would be over half full after one more entry. False when no memory
// could be had (the tables are left as they were).
[[gnu::always_inline]] inline bool make_room() {
  if (g_samples.stack_count == g_samples.stack_capacity) {
    const std::uint32_t capacity =
        g_samples.stack_capacity == 0 ? kFirstCapacity : 2 * g_samples.stack_capacity;
    auto* stacks = map_array<SampledStack>(capacity);
    if (stacks == nullptr) return false;
    if (g_samples.stack_count != 0)
      std::memcpy(stacks, g_samples.stacks, g_samples.stack_count * sizeof(SampledStack));
    unmap_array(g_samples.stacks, g_samples.stack_capacity);
    g_samples.stacks = stacks;
    g_samples.stack_capacity = capacity;
  }
  if (2 * (g_samples.stack_index.used + 1) > g_samples.stack_index.capacity) {
    const std::uint32_t capacity = std::max(kFirstCapacity, 2 * g_samples.stack_index.capacity);
    auto* slots = map_array<std::uint32_t>(capacity);
    if (slots == nullptr) return false;
    Table<std::uint32_t> old = g_samples.stack_index;
    g_samples.stack_index = {slots, capacity, old.used};
    for (std::uint32_t s = 0; s < g_samples.stack_count; ++s) {
      const SampledStack& stack = g_samples.stacks[s];
      g_samples.stack_index.slots[stack_slot(stack.hash, stack.frames, stack.depth, stack.tag)] =
          s + 1;
    }
    unmap_array(old.slots, old.capacity);
  }
  if (2 * (g_samples.live.used + 1) > g_samples.live.capacity) {
    const std::uint32_t capacity = std::max(kFirstCapacity, 2 * g_samples.live.capacity);
    auto* slots = map_array<LiveSample>(capacity);
    if (slots == nullptr) return false;
    Table<LiveSample> old = g_samples.live;
    g_samples.live = {slots, capacity, old.used};
    for (std::uint32_t i = 0; i < old.capacity; ++i) {
      if (old.slots[i].address != 0)
        g_samples.live.slots[live_slot(old.slots[i].address)] = old.slots[i];
    }
    unmap_array(old.slots, old.capacity);
  }
  return true;
}

// Takes the live sample in slot i out of its stack's figures and out of the table, moving the
// entries after it back so that no probe sequence is broken (no tombstones).
void remove_live(std::uint32_t i) {
  const LiveSample sample = g_samples.live.slots[i];
  SampledStack& stack = g_samples.stacks[sample.stack];
  stack.inuse_objects -= sample.objects;
  stack.inuse_bytes -= sample.bytes;
  g_samples.totals.inuse_bytes -= sample.bytes;
  const std::uint32_t mask = g_samples.live.capacity - 1;
  for (std::uint32_t j = (i + 1) & mask; g_samples.live.slots[j].address != 0; j = (j + 1) & mask) {
    const std::uint32_t home = home_of(g_samples.live.slots[j].address, g_samples.live.capacity);
    // The entry at j may move to i when i lies on its probe path, from home to j.
    if (((j - home) & mask) >= ((j - i) & mask)) {
      g_samples.live.slots[i] = g_samples.live.slots[j];
      i = j;
    }
  }
  g_samples.live.slots[i] = LiveSample{};
  --g_samples.live.used;
  g_samples.live_count.store(g_samples.live.used, std::memory_order_relaxed);
}

// `address` is not 0 (forget_sample's block is not nullptr): a slot of 0 is one claimed and not
// stored yet, which the next holder of the lock waits for (drain_claimed_forgets).
void defer_forget(std::uintptr_t address) {
  const std::uint32_t i = g_samples.deferred_count.fetch_add(1, std::memory_order_acq_rel);
  if (i < kDeferredForgets) g_deferred_forgets[i].store(address, std::memory_order_release);
}

// Under the lock. A free that claimed a slot stores its address a few instructions later: the
// holder waits for it. A free that claims one meanwhile is taken too, before the count is reset.
// Under the lock: the sample at a deferred free's address, if any, out of the figures.
void forget_deferred(std::uintptr_t address) {
  if (g_samples.live.used == 0) return;
  const std::uint32_t i = live_slot(address);
  if (g_samples.live.slots[i].address != 0) remove_live(i);
}

[[gnu::noinline]] void drain_claimed_forgets(std::uint32_t count) {
  std::uint32_t next = 0;
  for (;;) {
    for (; next < count && next < kDeferredForgets; ++next) {
      std::uintptr_t address;
      while ((address = g_deferred_forgets[next].exchange(0, std::memory_order_acquire)) == 0)
        os_spin_pause();
      forget_deferred(address);
    }
    if (g_samples.deferred_count.compare_exchange_strong(count, 0, std::memory_order_acq_rel))
      return;
  }
}

// In the child of fork(), its only thread, which holds the lock: the frees deferred before the
// fork are taken out, but a slot that a thread claimed without storing its address yet is passed
// over, where drain_claimed_forgets would wait for it forever: that thread, and its free, are
// not in the child (the block stays allocated there).
void drain_stored_forgets_in_child() {
  const std::uint32_t count =
      std::min(g_samples.deferred_count.load(std::memory_order_relaxed), kDeferredForgets);
  for (std::uint32_t next = 0; next < count; ++next) {
    const std::uintptr_t address = g_deferred_forgets[next].exchange(0, std::memory_order_relaxed);
    if (address != 0) forget_deferred(address);
  }
  g_samples.deferred_count.store(0, std::memory_order_relaxed);
}

void drain_deferred_forgets() {
  const std::uint32_t count = g_samples.deferred_count.load(std::memory_order_acquire);
  if (count != 0) [[unlikely]]
    drain_claimed_forgets(count);
}

}  // namespace

namespace {

// Under the lock, with room made: `record` as the live sample at `address`, in free slot `slot`
// of the live table, and in its stack's and the totals' in-use figures.
void add_live(std::uint32_t slot, std::uintptr_t address, const SampleRecord& record) {
  SampledStack& stack = g_samples.stacks[record.stack];
  stack.inuse_objects += record.objects;
  stack.inuse_bytes += record.bytes;
  g_samples.live.slots[slot] =
      LiveSample{address, record.stack, record.spare_class, record.objects, record.bytes};
  ++g_samples.live.used;
  g_samples.live_count.store(g_samples.live.used, std::memory_order_relaxed);
  g_samples.totals.inuse_bytes += record.bytes;
}

// What a sample adds, worked out before the lock is taken: its estimates, and its stack's hash
// unless the stack's index is known (the thread recorded the same stack under the same tag last;
// stacks are never taken out of the table).
struct SampleEntry {
  std::int64_t objects;
  std::int64_t bytes;
  bool known;
  std::uint64_t hash;
};

// A sample's estimates for its size at its mean, as the thread's last sample had them: a loop
// samples the same size again, and working them out is a chain of dependent steps (a division,
// up to 16 multiply-adds of the series, another division: some 10 to 15 ns a sample by wall
// time) that the memo's two compares replace. Its mean is 0 until the thread's first sample.
struct SampleWeights {
  std::size_t size;
  std::int64_t mean;
  std::int64_t objects;  // in 1/kCountUnit
  std::int64_t bytes;
};
constinit POOLALLOC_THREAD_LOCAL SampleWeights t_weights{};

const SampleWeights& weights_of(std::size_t size, std::int64_t mean) {
  SampleWeights& weights = t_weights;
  if (weights.size != size || weights.mean != mean) {
    // The chance that an allocation of `size` bytes held a sample point: 1 - e^(-size/mean).
    const double per_sample =
        1 / chance_of_sample(static_cast<double>(size) / static_cast<double>(mean));
    weights = {size, mean, rounded(static_cast<double>(kCountUnit) * per_sample),
               rounded(static_cast<double>(size) * per_sample)};
  }
  return weights;
}

[[gnu::always_inline]] inline SampleEntry entry_of(std::size_t size, std::int64_t mean,
                                                   const CapturedStack& stack, std::uint32_t tag) {
  const SampleWeights& weights = weights_of(size, mean);
  const bool known = stack.recorded_index != 0 && stack.recorded_tag == tag;
  return {weights.objects, weights.bytes, known,
          known ? 0 : hash_of(stack.frames(), stack.depth, tag)};
}

// Under the lock: record_sample's work.
bool record_locked(const void* block, const SampleEntry& entry, unsigned spare_class,
                   CapturedStack& stack, std::uint32_t tag, SampleTotals& totals) {
  drain_deferred_forgets();
  if (!make_room()) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  std::uint32_t live = live_slot(address);
  // The address of a sample whose free could not be seen (while the lock was held for fork):
  // that allocation is gone.
  if (g_samples.live.slots[live].address == address) {
    remove_live(live);
    live = live_slot(address);
  }
  if (!entry.known) {
    const std::uint32_t index_slot = stack_slot(entry.hash, stack.frames(), stack.depth, tag);
    if (g_samples.stack_index.slots[index_slot] == 0) {
      SampledStack& added = g_samples.stacks[g_samples.stack_count];
      added = SampledStack{};
      added.hash = entry.hash;
      added.depth = stack.depth;
      added.tag = tag;
      std::copy_n(stack.frames(), stack.depth, added.frames);
      g_samples.stack_index.slots[index_slot] = ++g_samples.stack_count;
      ++g_samples.stack_index.used;
    }
    stack.recorded_index = g_samples.stack_index.slots[index_slot];
    stack.recorded_tag = tag;
  }
  const std::uint32_t s = stack.recorded_index - 1;
  g_samples.stacks[s].alloc_objects += entry.objects;
  g_samples.stacks[s].alloc_bytes += entry.bytes;
  g_samples.totals.alloc_bytes += entry.bytes;
  add_live(live, address, {s, spare_class, entry.objects, entry.bytes});
  totals = g_samples.totals;
  return true;
}

// Under the lock: a spare block of class `cls` taken out, or nullptr. The latest first: its
// memory was touched last.
void* take_spare(unsigned cls) {
  for (std::uint32_t i = g_samples.spare_count; i-- > 0;) {
    if (g_samples.spares[i].cls != cls) continue;
    void* block = g_samples.spares[i].block;
    std::copy(g_samples.spares + i + 1, g_samples.spares + g_samples.spare_count,
              g_samples.spares + i);
    --g_samples.spare_count;
    g_samples.spare_bytes -= class_size(cls);
    g_samples.spares_waiting.store(g_samples.spare_count, std::memory_order_relaxed);
    return block;
  }
  return nullptr;
}

// Under the lock: the oldest `count` spares taken out into `blocks`.
std::uint32_t take_oldest_spares(std::uint32_t count, void* (&blocks)[kMostSpareBlocks]) {
  for (std::uint32_t i = 0; i < count; ++i) {
    blocks[i] = g_samples.spares[i].block;
    g_samples.spare_bytes -= class_size(g_samples.spares[i].cls);
  }
  std::copy(g_samples.spares + count, g_samples.spares + g_samples.spare_count, g_samples.spares);
  g_samples.spare_count -= count;
  g_samples.spares_waiting.store(g_samples.spare_count, std::memory_order_relaxed);
  return count;
}

}  // namespace

bool record_sample(const void* block, std::size_t size, std::int64_t mean, unsigned spare_class,
                   CapturedStack& stack, std::uint32_t tag, SampleTotals& totals) {
  const SampleEntry entry = entry_of(size, mean, stack, tag);
  const DepthScope section(t_sections);
  TryLockGuard guard(g_samples.lock);
  return guard.locked() && record_locked(block, entry, spare_class, stack, tag, totals);
}

void* record_sample_in_spare(unsigned cls, std::size_t size, std::int64_t mean,
                             CapturedStack& stack, std::uint32_t tag, SampleTotals& totals,
                             bool& recorded) {
  recorded = false;
  if (g_samples.spares_waiting.load(std::memory_order_relaxed) == 0) return nullptr;
  const SampleEntry entry = entry_of(size, mean, stack, tag);
  const DepthScope section(t_sections);
  TryLockGuard guard(g_samples.lock);
  if (!guard.locked()) return nullptr;
  void* block = take_spare(cls);
  if (block != nullptr) recorded = record_locked(block, entry, cls + 1, stack, tag, totals);
  return block;
}

void restore_sample(const void* block, const SampleRecord& record) {
  const DepthScope section(t_sections);
  LockGuard guard(g_samples.lock);
  drain_deferred_forgets();
  if (!make_room()) return;
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  add_live(live_slot(address), address, record);
}

bool sample_records_hold_blocks() {
  return g_samples.live_count.load(std::memory_order_relaxed) != 0 ||
         g_samples.spares_waiting.load(std::memory_order_relaxed) != 0;
}

Forgotten forget_sample(const void* block, bool may_keep, SampleRecord* removed) {
  const DepthScope section(t_sections);
  TryLockGuard guard(g_samples.lock);
  if (!guard.locked()) {
    defer_forget(reinterpret_cast<std::uintptr_t>(block));
    return Forgotten::kNotSampled;
  }
  drain_deferred_forgets();
  const std::uint32_t i =
      g_samples.live.used == 0 ? 0 : live_slot(reinterpret_cast<std::uintptr_t>(block));
  if (g_samples.live.used == 0 || g_samples.live.slots[i].address == 0) {
    // Not a live sample's block: one that waits as a spare was freed already.
    for (std::uint32_t s = 0; s < g_samples.spare_count; ++s) {
      if (g_samples.spares[s].block == block)
        report_double_free_of_sampled_block(may_keep ? "free" : "realloc", block,
                                            class_size(g_samples.spares[s].cls));
    }
    return Forgotten::kNotSampled;
  }
  const LiveSample& live = g_samples.live.slots[i];
  const std::uint32_t spare_class = live.spare_class;
  if (removed != nullptr) *removed = {live.stack, live.spare_class, live.objects, live.bytes};
  remove_live(i);
  if (!may_keep || spare_class == 0 || g_samples.spare_count == kMostSpareBlocks ||
      g_samples.spare_bytes + class_size(spare_class - 1) > kMostSpareBytes)
    return Forgotten::kForgotten;
  g_samples.spares[g_samples.spare_count++] = SpareBlock{const_cast<void*>(block), spare_class - 1};
  g_samples.spare_bytes += class_size(spare_class - 1);
  g_samples.spares_waiting.store(g_samples.spare_count, std::memory_order_relaxed);
  return Forgotten::kKeptAsSpare;
}

std::uint32_t take_all_spare_sample_blocks(void* (&blocks)[kMostSpareBlocks], bool wait_for_fork) {
  const DepthScope section(t_sections);
  TryLockGuard guard(g_samples.lock, wait_for_fork);
  return guard.locked() ? take_oldest_spares(g_samples.spare_count, blocks) : 0;
}

bool spare_sample_blocks_wait() {
  return g_samples.spares_waiting.load(std::memory_order_relaxed) != 0;
}

SampleSnapshot take_sample_snapshot(bool without_waiting) {
  SampleSnapshot snapshot;
  if (t_sections != 0) return snapshot;  // a signal handler's, over this thread's own section
  const DepthScope section(t_sections);
  if (without_waiting ? !g_samples.lock.try_lock() : !g_samples.lock.lock_unless_forking())
    return snapshot;
  struct Unlock {
    ~Unlock() { g_samples.lock.unlock(); }
  } unlock;
  drain_deferred_forgets();
  snapshot.taken = true;
  if (g_samples.stack_count == 0) return snapshot;
  snapshot.mapped_bytes = std::size_t{g_samples.stack_count} * sizeof(SampledStack);
  snapshot.stacks = static_cast<SampledStack*>(os_map(snapshot.mapped_bytes));
  if (snapshot.stacks == nullptr) return {};
  std::memcpy(snapshot.stacks, g_samples.stacks, snapshot.mapped_bytes);
  snapshot.count = g_samples.stack_count;
  return snapshot;
}

void release_sample_snapshot(SampleSnapshot& snapshot) {
  if (snapshot.stacks != nullptr) os_unmap(snapshot.stacks, snapshot.mapped_bytes);
  snapshot = {};
}

void lock_samples_for_fork() {
  g_samples.lock.lock_for_fork();
}

void unlock_samples_after_fork(bool in_child) {
  if (in_child) drain_stored_forgets_in_child();
  g_samples.lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
