#include "tagged_system_blocks.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include "deferred_operations.hpp"
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
// records (4 KiB, a page: a program with a few tagged blocks above the pools touches one)
constexpr std::size_t kFirstCapacity = 256;

// The table, under g_table's lock (below).
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

Record record_of(std::uintptr_t block, unsigned tag, std::uint64_t bytes) {
  return {block, std::uint64_t{tag} << kTagShift | bytes};
}
SystemCharge charge_of(const Record& record) {
  return {static_cast<unsigned>(record.tag_and_bytes >> kTagShift),
          record.tag_and_bytes & ((std::uint64_t{1} << kTagShift) - 1), true};
}

// Under the lock: records a block that has no record.
void insert(const Record& record) {
  if (!make_room()) return;  // no memory: the block goes uncharged
  std::size_t slot = slot_of(record.block, g_capacity);
  while (g_records[slot].block > kRemoved) slot = (slot + 1) & (g_capacity - 1);
  if (g_records[slot].block == kEmpty) ++g_used;
  g_records[slot] = record;
  const SystemCharge charge = charge_of(record);
  g_blocks[charge.tag].fetch_add(1, std::memory_order_relaxed);
  g_bytes[charge.tag].fetch_add(charge.bytes, std::memory_order_relaxed);
  charge_tag(charge.tag, charge.bytes);
}

// Under the lock: the record of `block`, if there is one, goes with its charge.
SystemCharge remove(std::uintptr_t block) {
  Record* record = find(block);
  if (record == nullptr) return {0, 0, false};
  const SystemCharge charge = charge_of(*record);
  record->block = kRemoved;
  g_blocks[charge.tag].fetch_sub(1, std::memory_order_relaxed);
  g_bytes[charge.tag].fetch_sub(charge.bytes, std::memory_order_relaxed);
  discharge_tag(charge.tag, charge.bytes);
  return charge;
}

// A record made, or removed (of its block alone), while the lock was held for fork(). All zeros
// by default (deferred_operations.hpp).
struct Deferred {
  Record record{};
  bool removal = false;
};

void replay(const Deferred& operation) {
  if (operation.removal) {
    remove(operation.record.block);
  } else {
    insert(operation.record);
  }
}

// Last in the lock order (lock.hpp): nothing is taken under it, only mmap is called. While
// fork() holds it, requests and frees of other threads (and the forking thread's own, from fork
// handlers) neither wait nor go uncounted: they defer their records to its log, which the next
// holder replays (deferred_operations.hpp), at the latest the handlers that end the fork. The
// log's order is the order of the blocks' lives: a block is recorded after the system allocator
// handed it out, and its record removed before the block goes back to it (free, realloc), so
// before its address can be handed out again.
constinit DeferringLock<Deferred> g_table{replay};

// A visitor's (the table is frozen meanwhile): what the table and then the deferred records say
// of `block`.
SystemCharge look_up(std::uintptr_t block) {
  const Record* record = find(block);
  SystemCharge charge = record != nullptr ? charge_of(*record) : SystemCharge{0, 0, false};
  g_table.for_each_deferred([&](const Deferred& operation) {
    if (operation.record.block != block) return;
    charge = operation.removal ? SystemCharge{0, 0, false} : charge_of(operation.record);
  });
  return charge;
}

// Under the lock or, while fork() holds it, in its log. Should no memory be had (for the table
// or the log), the block goes uncharged.
void record(const Record& record) {
  g_table.with([&] { insert(record); }, [&] { static_cast<void>(g_table.defer({record, false})); });
}

}  // namespace

// errno is kept by all three: a mapping that fails sets it, and so does a wait for the lock (its
// futex call); the program's request or free succeeded.
void charge_system_block(void* block, std::uint64_t bytes) {
  const int tag = current_tag();
  if (tag == 0) return;
  const int saved_errno = errno;
  record(record_of(reinterpret_cast<std::uintptr_t>(block), static_cast<unsigned>(tag), bytes));
  errno = saved_errno;
  run_due_budget_calls();  // with the table unlocked: the callback may allocate
}

SystemCharge discharge_system_block(void* block) {
  if (block == nullptr || !g_tags_pushed.load(std::memory_order_relaxed)) return {0, 0, false};
  const int saved_errno = errno;
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  SystemCharge charge{0, 0, false};
  g_table.with([&] { charge = remove(address); },
               [&] {
                 charge = look_up(address);
                 // Should no memory be had for the log, the block stays charged.
                 if (charge.found && !g_table.defer({{address, 0}, true})) charge.found = false;
               });
  errno = saved_errno;
  return charge;
}

void recharge_system_block(void* block, SystemCharge charge) {
  if (!charge.found) return;
  const int saved_errno = errno;
  record(record_of(reinterpret_cast<std::uintptr_t>(block), charge.tag, charge.bytes));
  errno = saved_errno;
  run_due_budget_calls();  // a realloc that grew the block in place may have taken it over
}

TaggedSystemUsage tagged_system_usage(unsigned tag) {
  return {g_blocks[tag].load(std::memory_order_relaxed),
          g_bytes[tag].load(std::memory_order_relaxed)};
}

void lock_tagged_system_blocks_for_fork() {
  g_table.lock_for_fork();
}

// Then the records deferred during the fork are replayed at once (the figures are exact when
// fork() returns): in the parent, by the first holder; in the child, where the parent's other
// threads are gone, the records they were deferring as fork() came, not yet published, are
// skipped (each such thread's one block of the moment may be off, as it would be torn).
void unlock_tagged_system_blocks_after_fork(bool in_child) {
  g_table.unlock_after_fork(in_child);
  if (g_table.lock_unless_forking()) g_table.unlock();
}

}  // namespace poolalloc::internal
