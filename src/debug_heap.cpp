#include "debug_heap.hpp"

#include "platform.hpp"

#if POOLALLOC_LINUX
#include <pthread.h>
#include <sys/single_threaded.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "allocator.hpp"
#include "block_registry.hpp"
#include "call_sites.hpp"
#include "deferred_operations.hpp"
#include "depth_scope.hpp"
#include "intrusive_list.hpp"
#include "lock.hpp"
#include "options.hpp"
#include "os.hpp"
#include "poolalloc/detail/message.hpp"
#include "stats.hpp"

#if POOLALLOC_LINUX
#include "heap_profile.hpp"
#include "heap_sampler.hpp"
#endif

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
  // False when the block is larger than the whole quarantine, or no memory could be had for the
  // ring: the block should then be released now. Taken in, a block larger than the quarantine
  // would push every other block out before itself.
  bool add(const FreedBlock& block) {
    if (block.record.size > g_options.quarantine_bytes) return false;
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
    ring_ = static_cast<FreedBlock*>(os_map(kCapacity * sizeof(FreedBlock)));
    return ring_ != nullptr;
  }
  FreedBlock* ring_ = nullptr;
  std::size_t first_ = 0, count_ = 0, bytes_ = 0;
};

// An allocation (its record) or a free (its pointer in record.address) made while the heap's
// lock was held for fork(). All zeros by default (deferred_operations.hpp).
struct DeferredOperation {
  bool is_free = false;
  BlockRecord record;
  std::size_t expected_size = 0;  // of a free: a sized delete's size, or SIZE_MAX
  const void* site = nullptr;     // of a free
};

BlockRegistry g_registry;  // under the heap's lock (g_heap), as are the two below
Quarantine g_quarantine;

void free_locked(const DeferredOperation& operation);

// Under the heap's lock: replays one operation deferred while it was held for fork. Should no
// memory be had for the registry, an allocation's block goes unrecorded: a later free of it is
// reported as invalid.
void replay(const DeferredOperation& operation) {
  if (operation.is_free) {
    free_locked(operation);
  } else {
    static_cast<void>(g_registry.insert(operation.record));
  }
}

// The debug heap's lock, fifth in the lock order (lock.hpp): it guards g_registry,
// g_quarantine and g_to_release, and is never held while calling into the allocator underneath.
//
// The fork protocol is the core's (lock.hpp, bootstrap.cpp): from the prepare handler to the
// parent or child handler the lock is held for fork, and NO thread waits for it (one may hold a
// libc lock that fork() needs next, or be the forking thread running another library's
// handler, which may run before our child handler or after our prepare handler). Instead
// (deferred_operations.hpp):
// - an allocation or a free appends itself to the lock's log, without a lock and without a
//   bound, and the next holder of the lock replays the log in order;
// - a lookup (realloc, malloc_usable_size, poolalloc_owns) reads the registry and the
//   quarantine, which stay unchanged while the lock is held for fork, and then the log.
// The log's order is a valid order: a block's allocation is appended before malloc returns it,
// so before any free of it (by any thread) can be appended; a deferred free keeps its block out
// of the allocator, so no address comes back in a new allocation while its free waits in the
// log.
constinit DeferringLock<DeferredOperation> g_heap{replay};

// Blocks out of the quarantine, already checked, waiting for the lock's holder to release them
// once it has dropped the lock (the release calls into the allocator). Linked through their
// front guard bytes, checked before they were overwritten: no memory, no bound.
struct ToRelease {
  ToRelease* next;
  std::byte* block;  // the underlying block
};
static_assert(sizeof(ToRelease) <= kGuardBytes);
ToRelease* g_to_release = nullptr;

// Under the lock: the blocks queued for release, which the caller releases once it dropped it.
ToRelease* take_to_release() {
  return std::exchange(g_to_release, nullptr);
}
void release(ToRelease* blocks) {
  while (ToRelease* block = list_pop(blocks)) deallocate(block->block);
}

#if POOLALLOC_LINUX
// The calling thread's depth in sections of the heap's lock (DepthScope): a dump from a signal
// handler that interrupted one must not wait for its own thread (DebugHeap::profile_dump). On
// Windows, which has no heap profile, nothing is counted: a thread-local variable there would
// take one of the program's TLS indexes (native_thread_word.hpp).
constinit POOLALLOC_THREAD_LOCAL std::uint32_t t_sections = 0;
struct HeapSection : DepthScope {
  HeapSection() : DepthScope(t_sections) {}
};
#else
struct HeapSection {};
#endif

// Runs `locked` under the lock, waiting for it: only where no fork can be in progress in this
// thread (exit, a dump). Then releases the blocks that left the quarantine meanwhile.
template <class Locked>
void under_heap_lock(const Locked& locked) {
  [[maybe_unused]] const HeapSection section;  // counted on Linux only
  g_heap.lock();
  locked();
  ToRelease* blocks = take_to_release();
  g_heap.unlock();
  release(blocks);
}

// Runs `locked` under the lock or, while it is held for fork(), `visit` as a visitor: never
// waits for a fork.
template <class Locked, class Visit>
void with_heap(const Locked& locked, const Visit& visit) {
  ToRelease* blocks = nullptr;
  [[maybe_unused]] const HeapSection section;  // counted on Linux only
  g_heap.with(
      [&] {
        locked();
        blocks = take_to_release();
      },
      visit);
  release(blocks);
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

// "0x5a1000 (24 bytes in a 48-byte block of size class 2, allocated at main+0x1c (/home/dev/game))"
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

// A detected error: one line on stderr, then abort unless POOLALLOC_ON_ERROR=report. Each
// report is made under detail::NoCancellation from its first look-up of a call site (a read of
// /proc/self/maps) to its write, both cancellation points, most under the heap's lock.
// Set before a report's abort, with the heap's lock held: in a DLL, Windows' abort runs the
// DLL's atexit handlers (check_at_exit), which would wait for that lock forever.
std::atomic<bool> g_aborting{false};

void report(detail::Message& message) {
  if (g_options.abort_on_error) {
    g_aborting.store(true, std::memory_order_relaxed);
    detail::fatal(message);
  }
  message << "\n";
  message.write_to_stderr();
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
  const detail::NoCancellation whole_report;
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
    const detail::NoCancellation whole_report;
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

// Under the heap's lock: a block out of the quarantine is checked, then queued for release once the
// lock is dropped (with_heap, under_heap_lock), linked through its front guard.
void release_later(const FreedBlock& block) {
  check_freed_fill(block, "found when the block left the quarantine");
  check_guards(block.record, "found when the block left the quarantine");
  auto* link = reinterpret_cast<ToRelease*>(front_guard(block.record));
  *link = ToRelease{nullptr, underlying_block(block.record)};
  list_push(g_to_release, *link);
}

// A pointer that is not a live block: say what it is, as precisely as the records allow.
// `freed` is the block p was, when the caller knows it was freed (while held for fork).
void report_invalid(const char* operation, const void* p, const void* site,
                    const FreedBlock* freed = nullptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const detail::NoCancellation whole_report;
  detail::Message message;
  message << "poolalloc-debug: ";
  if (freed == nullptr) freed = g_quarantine.find(address);
  if (freed != nullptr) {
    // A second free is a double free; a realloc or malloc_usable_size of a freed block, a use.
    const bool freeing = std::strcmp(operation, "free") == 0;
    message << (freeing ? "double free: " : "use after free: ") << operation << " of ";
    describe(message, freed->record);
    message << " at ";
    append_call_site(message, site);
    message << (freeing ? "; first freed at " : "; freed at ");
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
  if (size > SIZE_MAX - (front + kGuardBytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  const std::size_t total = size + front + kGuardBytes;
  auto* block = static_cast<std::byte*>(
      alignment <= kMinAlignment ? allocate(total) : allocate_aligned(alignment, total));
  if (block == nullptr) return nullptr;
  std::byte* user = block + front;
  std::memset(user - kGuardBytes, kGuardFill, kGuardBytes);
  std::memset(user, fill, size);
  std::memset(user + size, kGuardFill, kGuardBytes);
  DeferredOperation operation;
  operation.record = BlockRecord{reinterpret_cast<std::uintptr_t>(user), size, site, front};
  bool recorded = false;
  with_heap([&] { recorded = g_registry.insert(operation.record); },
            [&] { recorded = g_heap.defer(operation); });
  if (!recorded) {
    deallocate(block);
    errno = ENOMEM;
    return nullptr;
  }
  return user;
}

// Under the heap's lock: the checks of a free, then the block goes to the quarantine, and the
// oldest blocks beyond its budget (or this one, if the quarantine has no memory) are released
// later.
void free_locked(const DeferredOperation& operation) {
  void* p = reinterpret_cast<void*>(operation.record.address);
  const BlockRecord record = g_registry.remove(operation.record.address);
  if (record.address == 0) {
    report_invalid("free", p, operation.site);
    return;  // in report mode: leave the memory alone rather than corrupt anything
  }
  if (operation.expected_size != SIZE_MAX && operation.expected_size != record.size) {
    const detail::NoCancellation whole_report;
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
  const FreedBlock freed{record, operation.site};
  if (!g_quarantine.add(freed)) release_later(freed);
  FreedBlock oldest{};
  while (g_quarantine.take_overflow(oldest)) release_later(oldest);
}

// Frees p after the checks; `expected_size` is a sized delete's size, or SIZE_MAX. While the lock
// is held for fork(), the free waits in the log, its checks made when it is replayed.
// free() preserves errno: a free that waits for the lock sleeps on its futex, which fails with
// EINTR or EAGAIN, and a report in report mode writes (os.hpp: the caller keeps errno).
void free_checked(void* p, std::size_t expected_size, const void* site) {
  if (p == nullptr) return;
  const int saved_errno = errno;
  DeferredOperation operation;
  operation.is_free = true;
  operation.record.address = reinterpret_cast<std::uintptr_t>(p);
  operation.expected_size = expected_size;
  operation.site = site;
  // Should no memory be had for the log, the block is leaked, unchecked.
  with_heap([&] { free_locked(operation); }, [&] { static_cast<void>(g_heap.defer(operation)); });
  errno = saved_errno;
}

// At exit: the guards of every live block and the fill of every quarantined one, then the
// leak report if asked for.
void check_at_exit();

#if POOLALLOC_LINUX
__attribute__((destructor)) void on_exit() {
  check_at_exit();
}

// fork() must not leave the heap's lock held by a thread that does not exist in the child: the
// prepare handler holds it for fork (the protocol above). These handlers skip a single-threaded
// process, as the core's do.
bool g_locked_for_fork = false;
void lock_for_fork() {
  if (__libc_single_threaded) return;
  g_heap.lock_for_fork();
  g_locked_for_fork = true;
}
void unlock_in_parent() {
  if (!g_locked_for_fork) return;
  g_locked_for_fork = false;
  g_heap.unlock_after_fork(false);
}
void unlock_in_child() {
  g_locked_for_fork = false;
  g_heap.unlock_after_fork(true);
}
__attribute__((constructor)) void on_load() {
  pthread_atfork(lock_for_fork, unlock_in_parent, unlock_in_child);
}
#else
// Windows: no fork; the checks at exit run from the C runtime's atexit, registered at load.
void on_exit() {
  check_at_exit();
}
POOLALLOC_AT_LOAD(on_load) {
  std::atexit(on_exit);
}
#endif

struct LeakSite {
  const void* site;
  std::uint64_t blocks;
  std::uint64_t bytes;
};

// The live blocks grouped by the call site that allocated them, in memory of its own (nothing
// here may call malloc); under the heap's lock. `sites` is nullptr when no block is live or no
// memory could be had.
struct LiveSites {
  LeakSite* sites = nullptr;
  std::size_t count = 0;
  std::size_t capacity = 0;
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;

  LiveSites() {
    capacity = g_registry.size();
    if (capacity == 0) return;
    sites = static_cast<LeakSite*>(os_map(capacity * sizeof(LeakSite)));
    if (sites == nullptr) return;
    blocks = capacity;
    g_registry.for_each([&](const BlockRecord& record) {
      bytes += record.size;
      LeakSite* found = std::find_if(
          sites, sites + count, [&](const LeakSite& s) { return s.site == record.allocated_at; });
      if (found == sites + count) sites[count++] = {record.allocated_at, 0, 0};
      ++found->blocks;
      found->bytes += record.size;
    });
  }
  ~LiveSites() {
    if (sites != nullptr) os_unmap(sites, capacity * sizeof(LeakSite));
  }
  LiveSites(const LiveSites&) = delete;
  LiveSites& operator=(const LiveSites&) = delete;
};

void report_leaks() {
  const detail::NoCancellation whole_report;
  LiveSites live;
  if (live.sites == nullptr) return;
  std::sort(live.sites, live.sites + live.count,
            [](const LeakSite& a, const LeakSite& b) { return a.bytes > b.bytes; });
  detail::Message header;
  header << "poolalloc-debug: leak report: " << live.bytes << " bytes in " << live.blocks
         << " blocks from " << std::uint64_t{live.count} << " call sites\n";
  header.write_to_stderr();
  for (std::size_t i = 0; i < live.count; ++i) {
    detail::Message line;
    line << "poolalloc-debug:   " << live.sites[i].bytes << " bytes in " << live.sites[i].blocks
         << " blocks allocated at ";
    append_call_site(line, live.sites[i].site);
    line << "\n";
    line.write_to_stderr();
  }
}

#if POOLALLOC_LINUX
// The exact profile's samples: one per call site, whose one frame is the site.
struct SiteReader {
  const LiveSites* live;
  std::size_t next = 0;
};

bool next_site(void* context, ProfileSample* out) {
  auto& reader = *static_cast<SiteReader*>(context);
  if (reader.next == reader.live->count) return false;
  const LeakSite& site = reader.live->sites[reader.next++];
  const auto blocks = static_cast<std::int64_t>(site.blocks);
  const auto bytes = static_cast<std::int64_t>(site.bytes);
  *out = ProfileSample{&site.site, 1, blocks, bytes, blocks, bytes, nullptr};
  return true;
}
#endif

void check_at_exit() {
  if (g_aborting.load(std::memory_order_relaxed)) return;  // the report's thread holds the lock
  under_heap_lock([] {
    g_registry.for_each([](const BlockRecord& record) { check_guards(record, "found at exit"); });
    g_quarantine.for_each(
        [](const FreedBlock& block) { check_freed_fill(block, "found at exit"); });
    if (g_options.leak_report) report_leaks();
  });
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

// What the records say of `address`: its live record (true), or false and, if it was freed
// while the lock was held for fork, `freed`. Under the lock (the log is then empty) or as a
// visitor.
bool look_up(std::uintptr_t address, BlockRecord& record, FreedBlock& freed) {
  const BlockRecord* live = g_registry.find(address);
  bool found = live != nullptr;
  if (found) record = *live;
  freed = FreedBlock{};
  g_heap.for_each_deferred([&](const DeferredOperation& operation) {
    if (operation.record.address != address) return;
    if (!operation.is_free) {
      record = operation.record;
      found = true;
    } else if (found) {  // the first free of a live block; a later one is a double free
      freed = FreedBlock{record, operation.site};
      found = false;
    }
  });
  return found;
}

// The live block p: its record, or false after reporting an invalid `operation`.
bool find_live(void* p, const char* operation, const void* site, BlockRecord& record) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  bool found = false;
  const auto find = [&] {
    FreedBlock freed{};
    found = look_up(address, record, freed);
    if (!found) report_invalid(operation, p, site, freed.record.address != 0 ? &freed : nullptr);
  };
  with_heap(find, find);
  return found;
}

namespace {

// A block of the C runtime's own (strdup's, _getcwd's). On Windows, where the C runtime keeps its
// malloc, such blocks reach poolalloc_free, poolalloc_realloc and delete, and the release build
// takes them (system_forwarding_windows.cpp): so does the debug build, handing them to the C
// runtime as the release build does. A block of the debug heap is never one: outside the pool
// region its pointer lies inside a block of the C runtime, past the front guard. (On Linux the C
// library's own blocks come from malloc, and so are recorded here.)
bool c_runtime_block(void* p) {
#if POOLALLOC_LINUX
  static_cast<void>(p);
  return false;
#else
  return p != nullptr && !region_owns(p) && system_heap_holds(p);
#endif
}

}  // namespace

void* DebugHeap::realloc(void* p, std::size_t size, const void* site) {
  if (c_runtime_block(p)) return system_realloc(p, size);
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
  if (c_runtime_block(p)) return free_outside_pools(p);
  free_checked(p, SIZE_MAX, site);
}

void DebugHeap::sized_free(void* p, std::size_t size, const void* site) {
  if (c_runtime_block(p)) return free_outside_pools(p);
  free_checked(p, size, site);
}

std::size_t DebugHeap::usable_size(void* p, const void* site) {
  if (p == nullptr) return 0;
  if (c_runtime_block(p)) return system_usable_size(p);
  BlockRecord record;
  if (!find_live(p, "malloc_usable_size", site, record)) return 0;
  return record.size;  // exactly what was asked for: a write past it is an overflow
}

bool DebugHeap::owns(const void* p) {
  if (p == nullptr) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  bool owned = false;
  const auto find = [&] {
    BlockRecord record;
    FreedBlock freed{};
    if (look_up(address, record, freed)) {
      owned = region_owns(underlying_block(record));
    } else {
      // Freed, and still held: in the quarantine, or in the log while held for fork.
      const FreedBlock* held = freed.record.address != 0 ? &freed : g_quarantine.find(address);
      owned = held != nullptr && region_owns(underlying_block(held->record));
    }
  };
  with_heap(find, find);
  return owned;
}

bool DebugHeap::trim(std::size_t pad) {
  return internal::trim(pad);
}

void DebugHeap::print_stats(int fd) {
  internal::print_stats(fd);
}

#if POOLALLOC_LINUX
void DebugHeap::malloc_stats() {
  print_malloc_stats();
}
#endif

poolalloc_stats DebugHeap::stats() {
  return collect_stats();
}

#if POOLALLOC_LINUX
struct mallinfo2 DebugHeap::mallinfo2() {
  return pooled_mallinfo2();
}

struct mallinfo DebugHeap::mallinfo() {
  return pooled_mallinfo();
}

int DebugHeap::malloc_info(int options, FILE* stream) {
  return pooled_malloc_info(options, stream);
}

void DebugHeap::profile_sample(std::size_t mean) {
  set_sample_mean(static_cast<std::int64_t>(mean));
}

int DebugHeap::profile_dump(const char* path) {
  char automatic[PATH_MAX];
  path = dump_path(path, automatic);
  if (path == nullptr) return -1;
  if (t_sections != 0) {  // a signal handler's, over this thread's own section
    errno = EAGAIN;
    return -1;
  }
  std::optional<LiveSites> live;
  under_heap_lock([&] { live.emplace(); });
  if (live->sites == nullptr && live->capacity != 0) {
    errno = ENOMEM;
    return -1;
  }
  SiteReader reader{&*live};
  return write_profile_file(path, 0, next_site, &reader) ? 0 : -1;
}
#endif

}  // namespace poolalloc::internal
