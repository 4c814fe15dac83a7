// Synchronized<Arena>: any toolkit allocator behind a mutex, for the rare pool that several
// threads share. The toolkit's allocators are single-threaded by choice; give each thread its own
// where that is possible, since every call here takes the lock.
//
// The mutex is recursive: the arena's calls run the objects' constructors and destructors, and
// the only way such an object reaches its shared pool (a parent despawning its child) is through
// this wrapper again, on the same thread, under the lock already held. The recursive lock costs a
// little more than a plain one, which matters little for a pool that is rare by design.
//
//   poolalloc::Synchronized<poolalloc::Pool<Bullet>> bullets(1024);  // Pool<Bullet>(1024)
//   Bullet* b = bullets.spawn(x, y);                                  // from any thread
//   bullets.with_lock([](auto& pool) { pool.for_each(draw); });
//   poolalloc::Synchronized<poolalloc::PoolResource> shared;         // a memory_resource
//   std::pmr::vector<int> ids(&shared);                               // on any thread
#pragma once

#include <cstddef>
#include <mutex>
#include <ostream>
#include <utility>

#include "detail/forward.hpp"
#include "detail/resource_of.hpp"

namespace poolalloc {

// Over a std::pmr::memory_resource (a PoolResource: SynchronizedPoolResource), it is a
// memory_resource too, as std::pmr::synchronized_pool_resource is: pmr containers on several
// threads may share it.
template <class Arena>
class Synchronized : public detail::ResourceBase<Arena, Synchronized<Arena>> {
 public:
  // Constructs the arena from the arena's own constructor arguments.
  template <class... Args>
  explicit Synchronized(Args&&... args) : arena_(std::forward<Args>(args)...) {}

  // The arena's interface, each call under the lock, where the arena has it (detail/forward.hpp):
  // allocate, deallocate, spawn, spawn_at, despawn, get, handle_of, for_each, each, clear,
  // compact, set_name, the queries, reset, marker, release, ... (make_unique is left out: its
  // pointer would despawn on the arena, around the lock; so are begin and end: a walk holds the
  // lock throughout, as for_each and each do, or through with_lock). A FixedPool's block size and
  // alignment are what StlAllocator asks.
  POOLALLOC_FORWARD([[nodiscard]], with_lock, allocate)
  POOLALLOC_FORWARD(, with_lock, deallocate)
  POOLALLOC_FORWARD([[nodiscard]], with_lock, spawn)
  POOLALLOC_FORWARD([[nodiscard]], with_lock, spawn_at)
  POOLALLOC_FORWARD(, with_lock, despawn)
  POOLALLOC_FORWARD_TYPED(with_lock, new_object)
  POOLALLOC_FORWARD_TYPED(with_lock, new_array)
  POOLALLOC_FORWARD(, with_lock, clear)
  POOLALLOC_FORWARD(, with_lock, compact)
  POOLALLOC_FORWARD(, with_lock, shrink)
  POOLALLOC_FORWARD(, with_lock, reserve)
  POOLALLOC_FORWARD(, with_lock, create)
  POOLALLOC_FORWARD(, with_lock, destroy)
  POOLALLOC_FORWARD(, with_lock, release)
  POOLALLOC_FORWARD(, with_lock, grow)
  POOLALLOC_FORWARD(, with_lock, reset)
  POOLALLOC_FORWARD(, with_lock, swap_buffers)
  POOLALLOC_FORWARD(, with_lock, free_to_marker)
  POOLALLOC_FORWARD(, with_lock, set_name)
  POOLALLOC_FORWARD(, with_lock, set_leak_report)
  POOLALLOC_FORWARD_QUERY(with_lock, get)
  POOLALLOC_FORWARD_QUERY(with_lock, handle_of)
  POOLALLOC_FORWARD_QUERY(with_lock, for_each)
  POOLALLOC_FORWARD_QUERY(with_lock, each)
  POOLALLOC_FORWARD_QUERY(with_lock, name)
  POOLALLOC_FORWARD_QUERY(with_lock, leak_report)
  POOLALLOC_FORWARD_QUERY(with_lock, size)
  POOLALLOC_FORWARD_QUERY(with_lock, capacity)
  POOLALLOC_FORWARD_QUERY(with_lock, peak)
  POOLALLOC_FORWARD_QUERY(with_lock, chunk_count)
  POOLALLOC_FORWARD_QUERY(with_lock, debug_checks)
  POOLALLOC_FORWARD_QUERY(with_lock, used)
  POOLALLOC_FORWARD_QUERY(with_lock, reserved)
  POOLALLOC_FORWARD_QUERY(with_lock, used_count)
  POOLALLOC_FORWARD_QUERY(with_lock, free_count)
  POOLALLOC_FORWARD_QUERY(with_lock, peak_used)
  POOLALLOC_FORWARD_QUERY(with_lock, owns)
  POOLALLOC_FORWARD_QUERY(with_lock, verify)
  POOLALLOC_FORWARD_QUERY(with_lock, marker)
  POOLALLOC_FORWARD_QUERY(with_lock, block_size)
  POOLALLOC_FORWARD_QUERY(with_lock, alignment)
  POOLALLOC_FORWARD_QUERY(with_lock, largest_block)
  POOLALLOC_FORWARD_QUERY(with_lock, upstream)

  // Runs f(arena) under the lock, for anything else the arena offers; returns what f returns.
  template <class F>
  decltype(auto) with_lock(F&& f) {
    const std::lock_guard lock(mutex_);
    return std::forward<F>(f)(arena_);
  }
  // The same for f(const arena&): its queries (used(), peak(), capacity(), ...).
  template <class F>
  decltype(auto) with_lock(F&& f) const {
    const std::lock_guard lock(mutex_);
    return std::forward<F>(f)(std::as_const(arena_));
  }

  // f(const arena&) under the lock if no other thread holds it now, and true; else false, at once.
  template <class F>
  bool try_with_lock(F&& f) const {
    const std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    std::forward<F>(f)(std::as_const(arena_));
    return true;
  }

  // The arena's line, printed under the lock.
  friend std::ostream& operator<<(std::ostream& out, const Synchronized& synchronized) requires
      requires(std::ostream& stream, const Arena& arena) {
    stream << arena;
  }
  {
    return synchronized.with_lock(
        [&out](const Arena& arena) -> std::ostream& { return out << arena; });
  }

 private:
  mutable std::recursive_mutex mutex_;
  Arena arena_;
};

}  // namespace poolalloc
