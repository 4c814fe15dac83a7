#include "tagged_system_blocks.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include "lock.hpp"
#include "os.hpp"
#include "tag_budgets.hpp"
#include "tag_registry.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// A record: the block's address (0: an empty slot; 1: a removed one, which a lookup passes),
// and its tag and usable bytes in one word (tag in the top byte).
struct Record {
  std::uintptr_t block;
  std::uint64_t tag_and_bytes;
};
constexpr std::uintptr_t kEmpty = 0;
constexpr std::uintptr_t kRemoved = 1;
constexpr unsigned kTagShift = 56;
constexpr std::size_t kFirstCapacity = 1024;  // records (16 KiB)

Lock g_lock;  // last in the lock order (lock.hpp): nothing is taken under it, only mmap is called
Record* g_records = nullptr;
std::size_t g_capacity = 0;  // a power of two, or 0 before the first record
std::size_t g_used = 0;      // records of blocks, and removed ones: what probes pass over
std::atomic<std::uint64_t> g_blocks[kTagCount] = {};
std::atomic<std::uint64_t> g_bytes[kTagCount] = {};

std::size_t slot_of(std::uintptr_t block, std::size_t capacity) {
  return static_cast<std::size_t>(((block >> 4) * 0x9e3779b97f4a7c15u) >> 32) & (capacity - 1);
}

// Under the lock: the record of `block`, or nullptr.
Record* find(std::uintptr_t block) {
  if (g_capacity == 0) return nullptr;
  for (std::size_t i = slot_of(block, g_capacity);; i = (i + 1) & (g_capacity - 1)) {
    if (g_records[i].block == block) return &g_records[i];
    if (g_records[i].block == kEmpty) return nullptr;
  }
}

// Under the lock: room for one more record, at most half the slots used or removed (a probe
// then ends soon). The records move into a mapping twice as large, or as large when most of the
// used slots are removed ones. False when no memory could be had.
bool make_room() {
  if ((g_used + 1) * 2 <= g_capacity) return true;
  std::size_t live = 0;
  for (std::size_t i = 0; i < g_capacity; ++i) live += g_records[i].block > kRemoved;
  const std::size_t capacity = g_capacity == 0                ? kFirstCapacity
                               : (live + 1) * 4 <= g_capacity ? g_capacity
                                                              : g_capacity * 2;
  auto* records = static_cast<Record*>(os_map(capacity * sizeof(Record)));
  if (records == nullptr) return false;
  for (std::size_t i = 0; i < g_capacity; ++i) {
    if (g_records[i].block <= kRemoved) continue;
    std::size_t slot = slot_of(g_records[i].block, capacity);
    while (records[slot].block != kEmpty) slot = (slot + 1) & (capacity - 1);
    records[slot] = g_records[i];
  }
  if (g_records != nullptr) os_unmap(g_records, g_capacity * sizeof(Record));
  g_records = records;
  g_capacity = capacity;
  g_used = live;
  return true;
}

// Under the lock: records `block` (not recorded) for `tag`.
void insert(std::uintptr_t block, unsigned tag, std::uint64_t bytes) {
  if (!make_room()) return;  // no memory: the block goes uncharged
  std::size_t slot = slot_of(block, g_capacity);
  while (g_records[slot].block > kRemoved) slot = (slot + 1) & (g_capacity - 1);
  if (g_records[slot].block == kEmpty) ++g_used;
  g_records[slot] = {block, std::uint64_t{tag} << kTagShift | bytes};
  g_blocks[tag].fetch_add(1, std::memory_order_relaxed);
  g_bytes[tag].fetch_add(bytes, std::memory_order_relaxed);
  charge_tag(tag, bytes);
}

}  // namespace

void charge_system_block(void* block, std::uint64_t bytes) {
  const int tag = current_tag();
  if (tag == 0) return;
  const int saved_errno = errno;  // a mapping that fails sets it; the request succeeded
  {
    TryLockGuard guard(g_lock);
    if (guard.locked())
      insert(reinterpret_cast<std::uintptr_t>(block), static_cast<unsigned>(tag), bytes);
  }
  errno = saved_errno;
  run_due_budget_calls();  // with the table unlocked: the callback may allocate
}

SystemCharge discharge_system_block(void* block) {
  if (block == nullptr || !g_tags_pushed.load(std::memory_order_relaxed)) return {0, 0, false};
  TryLockGuard guard(g_lock);
  if (!guard.locked()) return {0, 0, false};
  Record* record = find(reinterpret_cast<std::uintptr_t>(block));
  if (record == nullptr) return {0, 0, false};
  const auto tag = static_cast<unsigned>(record->tag_and_bytes >> kTagShift);
  const std::uint64_t bytes = record->tag_and_bytes & ((std::uint64_t{1} << kTagShift) - 1);
  record->block = kRemoved;
  g_blocks[tag].fetch_sub(1, std::memory_order_relaxed);
  g_bytes[tag].fetch_sub(bytes, std::memory_order_relaxed);
  discharge_tag(tag, bytes);
  return {tag, bytes, true};
}

void restore_system_charge(void* block, SystemCharge charge) {
  if (!charge.found) return;
  TryLockGuard guard(g_lock);
  if (guard.locked()) insert(reinterpret_cast<std::uintptr_t>(block), charge.tag, charge.bytes);
}

TaggedSystemUsage tagged_system_usage(unsigned tag) {
  return {g_blocks[tag].load(std::memory_order_relaxed),
          g_bytes[tag].load(std::memory_order_relaxed)};
}

void lock_tagged_system_blocks_for_fork() {
  g_lock.lock_for_fork();
}

void unlock_tagged_system_blocks_after_fork(bool in_child) {
  g_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
