#include "tag_registry.hpp"

#include <cerrno>
#include <cstring>

#include "bootstrap.hpp"
#include "central_lists.hpp"
#include "lock.hpp"
#include "tag_budgets.hpp"

namespace poolalloc::internal {
namespace {

Lock g_tag_lock;  // before all others in the lock order (lock.hpp): registrations, one at a time
// Written under g_tag_lock before the tag's id is published; read-only afterwards.
char g_names[kTagCount][kMaxTagName + 1] = {"untagged"};

struct alignas(64) TagOut {
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> peak{0};
};
TagOut g_out[kTagCount];

// Under g_tag_lock. "untagged", tag 0's name, is found like any registered name: it names tag 0.
int register_locked(const char* name, std::size_t length) {
  const unsigned count = g_registered_tags.load(std::memory_order_relaxed);
  for (unsigned tag = 0; tag < count; ++tag)
    if (std::strcmp(g_names[tag], name) == 0) return static_cast<int>(tag);
  if (count == kTagCount) {
    errno = ENOSPC;
    return -1;
  }
  if (!map_tag_stacks(count)) {
    errno = ENOMEM;
    return -1;
  }
  std::memcpy(g_names[count], name, length + 1);
  g_registered_tags.store(count + 1, std::memory_order_release);
  return static_cast<int>(count);
}

}  // namespace

int register_tag(const char* name) {
  const std::size_t length = name == nullptr ? 0 : strnlen(name, kMaxTagName + 1);
  if (length == 0 || length > kMaxTagName) {
    errno = EINVAL;
    return -1;
  }
  // Held for fork(), the forking thread holds the lock itself (this is a fork handler, or a
  // signal handler, running inside fork): it cannot wait, and may try again after the fork. Any
  // other thread waits for the fork to end (the parent handler wakes it; a child has no other
  // thread). That wait is bounded: from our prepare handler to our parent handler, the forking
  // thread waits only for the locks that glibc's fork() takes after the handlers (the NSS
  // configuration's, the stdio list's, malloc's arenas'), for the handlers of other libraries
  // that run after ours, and for the kernel's copy of the process. A program does not register
  // from inside glibc's malloc or NSS code; it could, from a stdio stream's lock (flockfile, a
  // fopencookie function) that a thread in fflush(NULL) waits for while holding the list lock
  // that fork() wants next, or from a lock of its own that such a fork handler takes: a cycle
  // through fork(), as with any wait for a fork, which statistics.md rules out. malloc cannot
  // wait so (getline reallocates under its stream's lock; bootstrap.cpp), and need not: it falls
  // back.
  TryLockGuard guard(g_tag_lock, /*wait_for_fork=*/!holds_locks_for_fork());
  if (!guard.locked()) {
    errno = EAGAIN;
    return -1;
  }
  return register_locked(name, length);
}

const char* tag_name(unsigned tag) {
  return g_names[tag];
}

void charge_tag(unsigned tag, std::uint64_t bytes) {
  TagOut& out = g_out[tag];
  const std::uint64_t now = out.bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  note_tag_charge(tag, now - bytes, now);
  std::uint64_t peak = out.peak.load(std::memory_order_relaxed);
  while (now > peak && !out.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void charge_tag_leaving_peak(unsigned tag, std::uint64_t bytes) {
  g_out[tag].bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void discharge_tag(unsigned tag, std::uint64_t bytes) {
  g_out[tag].bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

std::uint64_t tag_out_bytes(unsigned tag) {
  return g_out[tag].bytes.load(std::memory_order_relaxed);
}

std::uint64_t tag_peak_bytes(unsigned tag) {
  return g_out[tag].peak.load(std::memory_order_relaxed);
}

void lock_tag_registry_for_fork() {
  g_tag_lock.lock_for_fork();
}

void unlock_tag_registry_after_fork(bool in_child) {
  g_tag_lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
