#include "debug_heap.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "allocator.hpp"
#include "block_registry.hpp"
#include "call_sites.hpp"
#include "lock.hpp"
#include "options.hpp"
#include "poolalloc/detail/message.hpp"
#include "stats.hpp"

namespace poolalloc::internal {
namespace {

struct FreedBlock {
  BlockRecord record;
  const void* freed_at;
};

// Freed blocks wait here, filled with kFreedFill, before the allocator may reuse them: a
// second free of one is recognised as a double free, and a write into one is found when it
// leaves (just before its memory can be handed out again).
class Quarantine {
 public:
  // False when no memory could be had for the ring: the block should then be released now.
  bool add(const FreedBlock& block) {
    if (ring_ == nullptr && !map_ring()) return false;
    if (count_ == kCapacity) return false;
    ring_[(first_ + count_) % kCapacity] = block;
    ++count_;
    bytes_ += block.record.size;
    return true;
  }
  // Takes the oldest block out while the quarantine holds more than its budget.
  bool take_overflow(FreedBlock& oldest) {
    if (count_ == 0 || (bytes_ <= g_options.quarantine_bytes && count_ < kCapacity / 2))
      return false;
    oldest = ring_[first_];
    first_ = (first_ + 1) % kCapacity;
    --count_;
    bytes_ -= oldest.record.size;
    return true;
  }
  [[nodiscard]] const FreedBlock* find(std::uintptr_t address) const {
    for (std::size_t i = count_; i-- > 0;) {
      const FreedBlock& block = ring_[(first_ + i) % kCapacity];
      if (block.record.address == address) return &block;
    }
    return nullptr;
  }
  template <class Visit>
  void for_each(Visit visit) const {
    for (std::size_t i = 0; i < count_; ++i) visit(ring_[(first_ + i) % kCapacity]);
  }

 private:
  static constexpr std::size_t kCapacity = std::size_t{64} << 10;
  bool map_ring() {
    void* memory = mmap(nullptr, kCapacity * sizeof(FreedBlock), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return false;
    ring_ = static_cast<FreedBlock*>(memory);
    return true;
  }
  FreedBlock* ring_ = nullptr;
  std::size_t first_ = 0, count_ = 0, bytes_ = 0;
};

// Guards g_registry and g_quarantine: fourth in the lock order (lock.hpp), never held while
// calling into the allocator underneath.
Lock g_lock;
BlockRegistry g_registry;
Quarantine g_quarantine;

// While g_lock is held for fork(), nothing waits for it (see the fork protocol in
// bootstrap.cpp): an allocation records its block here instead of in the registry, a free
// queues itself here, both without a lock, and the next holder of g_lock replays them (records
// first, then frees). Lookups read the registry, frozen while held for fork, as readers
// counted in g_fork_readers, whom every holder of g_lock lets finish before changing it.
struct Deferred {
  static constexpr std::uintptr_t kEmpty = 0, kClaimed = 1;
  std::atomic<std::uintptr_t> address{kEmpty};  // published last
  bool is_free = false;
  BlockRecord record;                    // of an allocation
  std::size_t expected_size = SIZE_MAX;  // of a free: a sized delete's size
  const void* site = nullptr;            // of a free
};
constexpr std::size_t kDeferredCapacity = 4096;
Deferred g_deferred[kDeferredCapacity];
std::atomic<std::size_t> g_deferred_count{0};  // published and not replayed
std::atomic<int> g_fork_readers{0};

// False when every slot is taken (thousands of operations inside one fork).
bool defer(const Deferred& operation) {
  for (Deferred& slot : g_deferred) {
    std::uintptr_t expected = Deferred::kEmpty;
    if (slot.address.load(std::memory_order_relaxed) != Deferred::kEmpty ||
        !slot.address.compare_exchange_strong(expected, Deferred::kClaimed,
                                              std::memory_order_acquire))
      continue;
    slot.is_free = operation.is_free;
    slot.record = operation.record;
    slot.expected_size = operation.expected_size;
    slot.site = operation.site;
    g_deferred_count.fetch_add(1, std::memory_order_relaxed);
    slot.address.store(operation.record.address, std::memory_order_release);
    return true;
  }
  return false;
}

// A deferred allocation's record of `address`, or nullptr.
const BlockRecord* find_deferred_record(std::uintptr_t address) {
  if (g_deferred_count.load(std::memory_order_acquire) == 0) return nullptr;
  for (const Deferred& slot : g_deferred) {
    if (slot.address.load(std::memory_order_acquire) == address && !slot.is_free)
      return &slot.record;
  }
  return nullptr;
}

// Runs `read` (read-only use of the registry and the quarantine) and returns true if g_lock is
// held for fork(); returns false, running nothing, once it is not.
template <class Read>
bool read_while_held_for_fork(Read read) {
  g_fork_readers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const bool frozen = g_lock.held_for_fork();
  if (frozen) read();
  g_fork_readers.fetch_sub(1, std::memory_order_release);
  return frozen;
}

bool free_locked(const Deferred& operation, FreedBlock& to_release);

// Under g_lock: replays what was deferred during a fork, allocations first. A free that the
// quarantine cannot take stays queued (its block would have to be released under the lock).
void replay_deferred() {
  if (g_deferred_count.load(std::memory_order_acquire) == 0) return;
  for (const bool frees : {false, true}) {
    for (Deferred& slot : g_deferred) {
      const std::uintptr_t address = slot.address.load(std::memory_order_acquire);
      if (address <= Deferred::kClaimed || slot.is_free != frees) continue;
      if (frees) {
        FreedBlock to_release{};
        if (free_locked(slot, to_release)) {
          // Not quarantined: undo the removal, and try again on a later replay.
          g_registry.insert(to_release.record);
          return;
        }
      } else {
        g_registry.insert(slot.record);
      }
      slot.address.store(Deferred::kEmpty, std::memory_order_relaxed);
      g_deferred_count.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

// Takes g_lock, unless it is held for fork() (false, without waiting); then lets the readers
// of the frozen registry finish and replays what was deferred.
bool lock_heap_unless_forking() {
  if (!g_lock.lock_unless_forking()) return false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  while (g_fork_readers.load(std::memory_order_acquire) != 0) __builtin_ia32_pause();
  replay_deferred();
  return true;
}

// The same, waiting: only where no fork can be in progress in this thread (exit).
void lock_heap() {
  g_lock.lock();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  while (g_fork_readers.load(std::memory_order_acquire) != 0) __builtin_ia32_pause();
  replay_deferred();
}

std::byte* user_bytes(const BlockRecord& record) {
  return reinterpret_cast<std::byte*>(record.address);
}
std::byte* underlying_block(const BlockRecord& record) {
  return user_bytes(record) - record.front;
}
// The guard bytes right before the block. The rest of the front padding (up to the alignment,
// which may be 2^28 or more) is never written or read, so it costs address space, not RSS.
std::byte* front_guard(const BlockRecord& record) {
  return user_bytes(record) - kGuardBytes;
}

// "0x5a1000 (24 bytes in a 48-byte block of size class 2, allocated at main+0x1c (./game))"
void describe(detail::Message& message, const BlockRecord& record) {
  message << reinterpret_cast<const void*>(record.address) << " (" << std::uint64_t{record.size}
          << " bytes ";
  const std::byte* block = underlying_block(record);
  if (region_owns(block) && class_of_block(block) != kClassCount) {
    const unsigned cls = class_of_block(block);
    message << "in a " << class_size(cls) << "-byte block of size class " << cls;
  } else {
    message << "from the system allocator";
  }
  message << ", allocated at ";
  append_call_site(message, record.allocated_at);
  message << ")";
}

// A detected error: one line on stderr, then abort unless POOLALLOC_ON_ERROR=report.
void report(detail::Message& message) {
  if (g_options.abort_on_error) detail::fatal(message);
  message << "\n";
  message.write_to(STDERR_FILENO);
}

// Checks the guard bytes of a live block; reports an overwrite, naming `when` it was seen.
void check_guards(const BlockRecord& record, const char* when) {
  const std::byte* front = front_guard(record);
  const std::byte* back = user_bytes(record) + record.size;
  std::size_t before = 0;  // how far before the block the furthest overwritten byte lies
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    if (front[i] != std::byte{kGuardFill}) {
      before = kGuardBytes - i;
      break;
    }
  }
  std::size_t after = 0;  // how many bytes past the end were written, up to the furthest
  for (std::size_t i = kGuardBytes; i-- > 0;) {
    if (back[i] != std::byte{kGuardFill}) {
      after = i + 1;
      break;
    }
  }
  if (before == 0 && after == 0) return;
  detail::Message message;
  message << "poolalloc-debug: buffer overflow " << when << ": ";
  if (after != 0) message << std::uint64_t{after} << " bytes past the end";
  if (after != 0 && before != 0) message << " and ";
  if (before != 0) message << std::uint64_t{before} << " bytes before the start";
  message << " of ";
  describe(message, record);
  message << " were overwritten";
  report(message);
  // Still running (POOLALLOC_ON_ERROR=report): mend the guards so that this damage is reported
  // once, not again by every later check of the same block.
  std::memset(front_guard(record), kGuardFill, kGuardBytes);
  std::memset(user_bytes(record) + record.size, kGuardFill, kGuardBytes);
}

// Checks that a quarantined block still holds kFreedFill everywhere.
void check_freed_fill(const FreedBlock& block, const char* when) {
  const std::byte* bytes = user_bytes(block.record);
  for (std::size_t i = 0; i < block.record.size; ++i) {
    if (bytes[i] == std::byte{kFreedFill}) continue;
    detail::Message message;
    message << "poolalloc-debug: write after free " << when << ": byte " << std::uint64_t{i}
            << " of ";
    describe(message, block.record);
    message << " was changed after it was freed at ";
    append_call_site(message, block.freed_at);
    report(message);
    return;
  }
}

// Called without the lock: a block out of the quarantine belongs to nobody else.
void release_from_quarantine(const FreedBlock& block) {
  check_freed_fill(block, "found when the block left the quarantine");
  check_guards(block.record, "found when the block left the quarantine");
  deallocate(underlying_block(block.record));
}

// A pointer that is not a live block: say what it is, as precisely as the records allow.
void report_invalid(const char* operation, const void* p, const void* site) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  detail::Message message;
  message << "poolalloc-debug: ";
  if (const FreedBlock* freed = g_quarantine.find(address)) {
    message << "double free: " << operation << " of ";
    describe(message, freed->record);
    message << " at ";
    append_call_site(message, site);
    message << "; first freed at ";
    append_call_site(message, freed->freed_at);
  } else if (const BlockRecord* live = g_registry.find_containing(address)) {
    message << "invalid " << operation << " of " << p << " at ";
    append_call_site(message, site);
    message << ": an interior pointer, " << std::uint64_t{address - live->address}
            << " bytes into ";
    describe(message, *live);
  } else {
    message << "invalid " << operation << " of " << p << " at ";
    append_call_site(message, site);
    message << ": not a block that malloc returned";
    if (region_owns(p)) {
      const unsigned cls = class_of_block(p);
      if (cls != kClassCount) message << " (inside a block of size class " << cls << ")";
    } else {
      message << " (another allocator's memory, or a block freed long ago)";
    }
  }
  report(message);
}

void* allocate_checked(std::size_t alignment, std::size_t size, unsigned char fill,
                       const void* site) {
  const std::size_t front = std::max(kGuardBytes, alignment);
  std::size_t total = 0;
  if (__builtin_add_overflow(size, front + kGuardBytes, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* block = static_cast<std::byte*>(
      alignment <= kMinAlignment ? allocate(total) : allocate_aligned(alignment, total));
  if (block == nullptr) return nullptr;
  std::byte* user = block + front;
  std::memset(user - kGuardBytes, kGuardFill, kGuardBytes);
  std::memset(user, fill, size);
  std::memset(user + size, kGuardFill, kGuardBytes);
  const BlockRecord record{reinterpret_cast<std::uintptr_t>(user), size, site, front};
  bool recorded = false;
  if (lock_heap_unless_forking()) {
    recorded = g_registry.insert(record);
    g_lock.unlock();
  } else {
    Deferred operation;
    operation.record = record;
    recorded = defer(operation);
  }
  if (!recorded) {
    deallocate(block);
    errno = ENOMEM;
    return nullptr;
  }
  return user;
}

// Under g_lock: the checks of a free, then the block goes to the quarantine; true when it
// could not, and the caller is to release `to_release` once the lock is dropped.
bool free_locked(const Deferred& operation, FreedBlock& to_release) {
  void* p = reinterpret_cast<void*>(operation.address.load(std::memory_order_relaxed));
  const BlockRecord record = g_registry.remove(reinterpret_cast<std::uintptr_t>(p));
  if (record.address == 0) {
    report_invalid("free", p, operation.site);
    return false;  // in report mode: leave the memory alone rather than corrupt anything
  }
  if (operation.expected_size != SIZE_MAX && operation.expected_size != record.size) {
    detail::Message message;
    message << "poolalloc-debug: sized delete with the wrong size: "
            << std::uint64_t{operation.expected_size} << " bytes given at ";
    append_call_site(message, operation.site);
    message << " for ";
    describe(message, record);
    report(message);
  }
  check_guards(record, "found when the block was freed");
  std::memset(user_bytes(record), kFreedFill, record.size);
  to_release = FreedBlock{record, operation.site};
  return !g_quarantine.add(to_release);
}

// Frees p after the checks; `expected_size` is a sized delete's size, or SIZE_MAX.
void free_checked(void* p, std::size_t expected_size, const void* site) {
  if (p == nullptr) return;
  Deferred operation;
  operation.is_free = true;
  operation.record.address = reinterpret_cast<std::uintptr_t>(p);
  operation.address.store(operation.record.address, std::memory_order_relaxed);
  operation.expected_size = expected_size;
  operation.site = site;
  if (!lock_heap_unless_forking()) {
    // Held for fork(): checked when replayed. With every slot taken, the block is leaked.
    defer(operation);
    return;
  }
  FreedBlock to_release{};
  const bool release = free_locked(operation, to_release);
  g_lock.unlock();
  if (release) release_from_quarantine(to_release);
  for (;;) {
    FreedBlock oldest{};
    if (!lock_heap_unless_forking()) return;
    const bool overflow = g_quarantine.take_overflow(oldest);
    g_lock.unlock();
    if (!overflow) return;
    release_from_quarantine(oldest);
  }
}

// At exit: the guards of every live block and the fill of every quarantined one, then the
// leak report if asked for.
void check_at_exit();

__attribute__((destructor)) void on_exit() {
  check_at_exit();
}

// fork() must not leave the lock held by a thread that does not exist in the child. The
// protocol is the core's (bootstrap.cpp): held for fork, g_lock makes nobody wait. These
// handlers skip a single-threaded process, as the core's do.
bool g_locked_for_fork = false;
void lock_for_fork() {
  if (__libc_single_threaded) return;
  g_lock.lock_for_fork();
  g_locked_for_fork = true;
}
void unlock_in_parent() {
  if (!g_locked_for_fork) return;
  g_locked_for_fork = false;
  g_lock.unlock_after_fork(false);
}
void unlock_in_child() {
  // The threads that were reading the frozen registry, or deferring an operation, do not exist
  // here: forget their reads and their claimed slots.
  g_locked_for_fork = false;
  g_fork_readers.store(0, std::memory_order_relaxed);
  for (Deferred& slot : g_deferred) {
    if (slot.address.load(std::memory_order_relaxed) == Deferred::kClaimed)
      slot.address.store(Deferred::kEmpty, std::memory_order_relaxed);
  }
  g_lock.unlock_after_fork(true);
}
__attribute__((constructor)) void on_load() {
  pthread_atfork(lock_for_fork, unlock_in_parent, unlock_in_child);
}

struct LeakSite {
  const void* site;
  std::uint64_t blocks;
  std::uint64_t bytes;
};

void report_leaks() {
  // Group live blocks by call site, in memory of its own: nothing here may call malloc.
  const std::size_t capacity = g_registry.size();
  if (capacity == 0) return;
  void* memory = mmap(nullptr, capacity * sizeof(LeakSite), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;
  auto* sites = static_cast<LeakSite*>(memory);
  std::size_t site_count = 0;
  std::uint64_t total_bytes = 0;
  g_registry.for_each([&](const BlockRecord& record) {
    total_bytes += record.size;
    LeakSite* found = std::find_if(sites, sites + site_count, [&](const LeakSite& s) {
      return s.site == record.allocated_at;
    });
    if (found == sites + site_count) sites[site_count++] = {record.allocated_at, 0, 0};
    ++found->blocks;
    found->bytes += record.size;
  });
  std::sort(sites, sites + site_count,
            [](const LeakSite& a, const LeakSite& b) { return a.bytes > b.bytes; });
  detail::Message header;
  header << "poolalloc-debug: leak report: " << total_bytes << " bytes in "
         << std::uint64_t{g_registry.size()} << " blocks from " << std::uint64_t{site_count}
         << " call sites\n";
  header.write_to(STDERR_FILENO);
  for (std::size_t i = 0; i < site_count; ++i) {
    detail::Message line;
    line << "poolalloc-debug:   " << sites[i].bytes << " bytes in " << sites[i].blocks
         << " blocks allocated at ";
    append_call_site(line, sites[i].site);
    line << "\n";
    line.write_to(STDERR_FILENO);
  }
  munmap(memory, capacity * sizeof(LeakSite));
}

void check_at_exit() {
  lock_heap();
  g_registry.for_each([](const BlockRecord& record) { check_guards(record, "found at exit"); });
  g_quarantine.for_each([](const FreedBlock& block) { check_freed_fill(block, "found at exit"); });
  if (g_options.leak_report) report_leaks();
  g_lock.unlock();
}

}  // namespace

void* DebugHeap::malloc(std::size_t size, const void* site) {
  return allocate_checked(kMinAlignment, size, kFreshFill, site);
}

void* DebugHeap::calloc(std::size_t size, const void* site) {
  return allocate_checked(kMinAlignment, size, 0, site);
}

void* DebugHeap::aligned(std::size_t alignment, std::size_t size, const void* site) {
  return allocate_checked(alignment, size, kFreshFill, site);
}

// Runs `look_up` over the registry and the deferred records: under the lock, or, while the
// lock is held for fork(), as a reader of the frozen registry, never waiting for the fork.
template <class LookUp>
void read_registry(const LookUp& look_up) {
  while (!lock_heap_unless_forking()) {
    if (read_while_held_for_fork(look_up)) return;
  }
  look_up();
  g_lock.unlock();
}

// The live block p: its record, or false after reporting an invalid `operation`.
bool find_live(void* p, const char* operation, const void* site, BlockRecord& record) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  bool found = false;
  const auto look_up = [&] {
    const BlockRecord* live = g_registry.find(address);
    if (live == nullptr) live = find_deferred_record(address);
    if (live != nullptr) record = *live;
    found = live != nullptr;
    if (!found) report_invalid(operation, p, site);
  };
  read_registry(look_up);
  return found;
}

void* DebugHeap::realloc(void* p, std::size_t size, const void* site) {
  BlockRecord record;
  if (!find_live(p, "realloc", site, record)) {
    errno = EINVAL;
    return nullptr;
  }
  check_guards(record, "found by realloc");
  void* moved = allocate_checked(kMinAlignment, size, kFreshFill, site);
  if (moved == nullptr) return nullptr;
  std::memcpy(moved, p, std::min(size, record.size));
  free_checked(p, SIZE_MAX, site);
  return moved;
}

void DebugHeap::free(void* p, const void* site) {
  free_checked(p, SIZE_MAX, site);
}

void DebugHeap::sized_free(void* p, std::size_t size, const void* site) {
  free_checked(p, size, site);
}

std::size_t DebugHeap::usable_size(void* p, const void* site) {
  if (p == nullptr) return 0;
  BlockRecord record;
  if (!find_live(p, "malloc_usable_size", site, record)) return 0;
  return record.size;  // exactly what was asked for: a write past it is an overflow
}

bool DebugHeap::owns(const void* p) {
  if (p == nullptr) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  bool owned = false;
  read_registry([&] {
    const BlockRecord* live = g_registry.find(address);
    if (live == nullptr) live = find_deferred_record(address);
    if (live != nullptr) {
      owned = region_owns(underlying_block(*live));
      return;
    }
    const FreedBlock* freed = g_quarantine.find(address);
    owned = freed != nullptr && region_owns(underlying_block(freed->record));
  });
  return owned;
}

bool DebugHeap::trim(std::size_t pad) {
  return internal::trim(pad);
}

void DebugHeap::print_stats(int fd) {
  internal::print_stats(fd);
}

poolalloc_stats DebugHeap::stats() {
  return collect_stats();
}

struct mallinfo2 DebugHeap::mallinfo2() {
  return pooled_mallinfo2();
}

struct mallinfo DebugHeap::mallinfo() {
  return pooled_mallinfo();
}

int DebugHeap::malloc_info(int options, FILE* stream) {
  return pooled_malloc_info(options, stream);
}

}  // namespace poolalloc::internal
