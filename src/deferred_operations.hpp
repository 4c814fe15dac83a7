// Operations deferred while a lock is held for fork() (lock.hpp): from the prepare handler to the
// parent or child handler no thread may wait for the lock, so a thread that must change what it
// guards appends the change to a log instead, and the lock's next holder replays the log in order.
// The debug heap's registry (debug_heap.cpp) and the table of tagged system blocks
// (tagged_system_blocks.cpp) are kept so.
//
// DeferredLog: any thread appends to it without a lock, without waiting and without a fixed bound
// (chunks of memory of its own, mapped as it grows and kept for the next fork).
//
// DeferringLock: the lock, its log and the visitors. A thread that finds the lock held for fork
// becomes a "visitor", counted in visitors_: it may read what the lock guards (unchanged while the
// lock is held for fork) and the log, and append to the log. The ordering argument: a visitor
// increments visitors_ (an acq_rel read-modify-write), then reads the lock and goes on only if
// it reads "held for fork", else it takes the lock in the ordinary way; a holder takes the lock,
// which is then not held for fork, then reads visitors_ with an acq_rel read-modify-write and
// waits until it is 0. The two read-modify-writes of visitors_ are ordered one way or the other
// (its modification order): if the visitor's comes first, the holder reads its increment and
// waits for its release; if the holder's comes first, the visitor's acquire synchronises with it,
// so the visitor sees the lock taken and does not visit. So no visitor runs while a holder changes
// the guarded data or replays and clears the log: every append the holder replays is complete,
// no visitor sees the data change under it, and none reads a cleared entry. Visitors wait for
// nothing, so the holder's wait is bounded. (Read-modify-writes rather than Dekker's fences:
// ThreadSanitizer, which checks the core, does not model fences.)
// The log's order must be a valid order of the operations: the owner of the data sees to it (an
// allocation is appended before malloc returns the block, so before any free of it; a free is
// appended before the block's address can be handed out again).
// In the child of fork() only the forking thread runs: the parent's other visitors are forgotten
// (visitors_ = 0), and an operation one of them was appending, not yet published, is skipped by
// the replay, as if it had not started.
// Visitors are not async-signal-safe: a signal handler that takes the lock while its thread is a
// visitor would wait for itself, as malloc from a signal handler may in glibc.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

#include "lock.hpp"
#include "os.hpp"

namespace poolalloc::internal {

// `Operation` must be all zeros by default, so that the log's first chunk takes no room in the
// library's file.
template <class Operation>
class DeferredLog {
 public:
  // Any thread, no lock. False only when no memory could be had for a new chunk.
  // An entry is claimed with one fetch_add on its chunk's count; a thread that claims past the
  // end moves to the next chunk, linking a new one in first if there is none (the loser of that
  // race unmaps its own). Nothing waits for another thread, so a thread stopped anywhere (by a
  // fork, in the child) stops nobody else: its claimed entry is merely never published.
  bool append(const Operation& operation) {
    Chunk* chunk = tail_.load(std::memory_order_acquire);
    if (chunk == nullptr) chunk = &first_;
    for (;;) {
      const std::size_t i = chunk->claimed.fetch_add(1, std::memory_order_acq_rel);
      if (i < kEntries) {
        chunk->entries[i].operation = operation;
        chunk->entries[i].published.store(true, std::memory_order_release);
        return true;
      }
      Chunk* next = chunk->next.load(std::memory_order_acquire);
      if (next == nullptr) {
        Chunk* fresh = map_chunk();
        if (fresh == nullptr) return false;
        if (chunk->next.compare_exchange_strong(next, fresh, std::memory_order_acq_rel)) {
          next = fresh;
        } else {
          os_unmap(fresh, sizeof(Chunk));
        }
      }
      Chunk* expected = chunk == &first_ ? nullptr : chunk;
      tail_.compare_exchange_strong(expected, next, std::memory_order_acq_rel);
      chunk = next;
    }
  }
  // The published operations in the order of their appends; one still being appended is
  // skipped (so is one that a thread which does not exist in a fork() child left unfinished).
  template <class Visit>
  void for_each(Visit visit) const {
    for (const Chunk* chunk = &first_; chunk != nullptr;
         chunk = chunk->next.load(std::memory_order_acquire)) {
      const std::size_t claimed = chunk->claimed.load(std::memory_order_acquire);
      for (std::size_t i = 0; i < claimed && i < kEntries; ++i) {
        const Entry& entry = chunk->entries[i];
        if (entry.published.load(std::memory_order_acquire)) visit(entry.operation);
      }
    }
  }
  [[nodiscard]] bool empty() const { return first_.claimed.load(std::memory_order_acquire) == 0; }
  // Only while no append is under way: forgets every operation, keeping the chunks.
  void clear() {
    for (Chunk* chunk = &first_; chunk != nullptr;
         chunk = chunk->next.load(std::memory_order_relaxed)) {
      const std::size_t claimed = chunk->claimed.load(std::memory_order_relaxed);
      for (std::size_t i = 0; i < claimed && i < kEntries; ++i)
        chunk->entries[i].published.store(false, std::memory_order_relaxed);
      chunk->claimed.store(0, std::memory_order_relaxed);
    }
    tail_.store(nullptr, std::memory_order_release);
  }

 private:
  struct Entry {
    std::atomic<bool> published{false};  // set last, once `operation` is written
    Operation operation;
  };
  static constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
  static constexpr std::size_t kEntries =
      (kChunkBytes - 2 * sizeof(std::atomic<std::size_t>)) / sizeof(Entry);
  struct Chunk {
    std::atomic<Chunk*> next{nullptr};
    std::atomic<std::size_t> claimed{0};  // entries taken, counting the tries past the end
    Entry entries[kEntries];
  };
  static Chunk* map_chunk() {
    void* memory = os_map(sizeof(Chunk));
    return memory == nullptr ? nullptr : new (memory) Chunk;
  }

  Chunk first_;
  // The chunk that appends go to, or one before it; nullptr for first_ (so that the log is all
  // zeros at start).
  std::atomic<Chunk*> tail_{nullptr};
};

template <class Operation>
class DeferringLock {
 public:
  // `replay` applies one deferred operation, under the lock.
  using Replay = void (*)(const Operation&);
  constexpr explicit DeferringLock(Replay replay) : replay_(replay) {}

  // Takes the lock unless it is held for fork() (false, without waiting); then lets the visitors
  // finish and replays what was deferred.
  [[nodiscard]] bool lock_unless_forking() {
    if (!lock_.lock_unless_forking()) return false;
    settle_after_locking();
    return true;
  }
  // The same, waiting: only where the caller holds no libc lock and is not the forking thread.
  void lock() {
    lock_.lock();
    settle_after_locking();
  }
  void unlock() { lock_.unlock(); }

  // Runs `visit` as a visitor and returns true if the lock is held for fork(); returns false,
  // running nothing, once it is not.
  template <class Visit>
  bool visit_while_held_for_fork(const Visit& visit) {
    visitors_.fetch_add(1, std::memory_order_acq_rel);
    const bool held = lock_.held_for_fork();
    if (held) visit();
    visitors_.fetch_sub(1, std::memory_order_release);
    return held;
  }
  // Runs `locked` under the lock or, while the lock is held for fork(), `visit` as a visitor:
  // never waits for a fork.
  template <class Locked, class Visit>
  void with(const Locked& locked, const Visit& visit) {
    for (;;) {
      if (lock_unless_forking()) {
        locked();
        unlock();
        return;
      }
      if (visit_while_held_for_fork(visit)) return;
    }
  }

  // A visitor's: appends `operation` for the next holder. False when no memory could be had.
  bool defer(const Operation& operation) { return log_.append(operation); }
  // A visitor's (a holder finds nothing): the operations deferred so far, in order.
  template <class Visit>
  void for_each_deferred(Visit visit) const {
    log_.for_each(visit);
  }

  void lock_for_fork() { lock_.lock_for_fork(); }
  void unlock_after_fork(bool in_child) {
    if (in_child) visitors_.store(0, std::memory_order_relaxed);  // their threads are gone
    lock_.unlock_after_fork(in_child);
  }

 private:
  // Just after the lock was taken: waits for the visitors (a visit is a few loads or one append,
  // so a short spin, then the CPU goes to others in case a visitor was descheduled), then replays
  // the log in order and empties it.
  void settle_after_locking() {
    unsigned spins = 0;
    for (auto visiting = visitors_.fetch_add(0, std::memory_order_acq_rel); visiting != 0;
         visiting = visitors_.load(std::memory_order_acquire), ++spins) {
      if (spins < 64)
        os_spin_pause();
      else
        os_yield();
    }
    if (log_.empty()) return;
    log_.for_each(replay_);
    log_.clear();
  }

  Lock lock_;
  std::atomic<int> visitors_{0};
  Replay replay_;
  DeferredLog<Operation> log_;
};

}  // namespace poolalloc::internal
