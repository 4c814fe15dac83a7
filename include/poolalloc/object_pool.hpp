// Pool<T>: objects of one type constructed in the blocks of a FixedPool.
//
// spawn() constructs in place and returns nullptr when a fixed pool is full; despawn() destroys
// and frees. Any T works: types under 4 bytes get 4-byte blocks, over-aligned types get aligned
// blocks. With debug checks a pool destroyed while objects live lists them (FixedPool::destroy).
// Not thread-safe, by choice: use one pool per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "fixed_pool.hpp"

namespace poolalloc {

template <class T>
class Pool {
 public:
  struct Despawner {
    Pool* pool;
    void operator()(T* object) const { pool->despawn(object); }
  };
  using UniquePtr = std::unique_ptr<T, Despawner>;

  explicit Pool(std::size_t capacity, Growth growth = Growth::fixed,
                DebugChecks debug = kDefaultDebugChecks)
      : blocks_(sizeof(T), capacity, kAlignment, growth, debug) {}

  // nullptr when the pool is full. If T's constructor throws, the block goes back and the
  // exception propagates.
  template <class... Args>
  [[nodiscard]] T* spawn(Args&&... args) {
    void* block = blocks_.allocate();
    if (block == nullptr) return nullptr;
    if constexpr (std::is_nothrow_constructible_v<T, Args&&...>) {
      return ::new (block) T(std::forward<Args>(args)...);
    } else {
      try {
        return ::new (block) T(std::forward<Args>(args)...);
      } catch (...) {
        blocks_.deallocate(block);
        throw;
      }
    }
  }

  // nullptr is ignored; a pointer this pool did not spawn is reported before its destructor runs.
  void despawn(T* object) {
    blocks_.deallocate(object, [](void* block) { static_cast<T*>(block)->~T(); });
  }

  // Empty when the pool is full.
  template <class... Args>
  [[nodiscard]] UniquePtr make_unique(Args&&... args) {
    return UniquePtr(spawn(std::forward<Args>(args)...), Despawner{this});
  }

  [[nodiscard]] std::size_t size() const { return blocks_.used_count(); }
  [[nodiscard]] std::size_t capacity() const { return blocks_.capacity(); }

 private:
  static constexpr std::size_t kAlignment = std::max(alignof(T), alignof(std::uint32_t));

  FixedPool blocks_;
};

}  // namespace poolalloc
