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

  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.allocate(std::forward<Args>(args)...); }
  [[nodiscard]] auto* allocate(Args&&... args) {
    const std::lock_guard lock(mutex_);
    return arena_.allocate(std::forward<Args>(args)...);
  }
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.deallocate(std::forward<Args>(args)...); }
  void deallocate(Args&&... args) {
    const std::lock_guard lock(mutex_);
    arena_.deallocate(std::forward<Args>(args)...);
  }
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.spawn(std::forward<Args>(args)...); }
  [[nodiscard]] auto* spawn(Args&&... args) {
    const std::lock_guard lock(mutex_);
    return arena_.spawn(std::forward<Args>(args)...);
  }
  template <class... Args>
  requires requires(Arena& arena, Args&&... args) { arena.despawn(std::forward<Args>(args)...); }
  void despawn(Args&&... args) {
    const std::lock_guard lock(mutex_);
    arena_.despawn(std::forward<Args>(args)...);
  }

  // A FixedPool's block size and alignment, read under the lock (what StlAllocator asks).
  [[nodiscard]] std::size_t block_size() const requires requires(const Arena& arena) {
    arena.block_size();
  }
  {
    return with_lock([](const Arena& arena) { return arena.block_size(); });
  }
  [[nodiscard]] std::size_t alignment() const requires requires(const Arena& arena) {
    arena.alignment();
  }
  {
    return with_lock([](const Arena& arena) { return arena.alignment(); });
  }

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
