// How a wrapper (Synchronized, Tracked) forwards the interface of the arena it wraps: one member
// template per name, offered where the arena has a call of that name that takes the arguments (a
// requires-clause), so that a wrapper has exactly what its arena has: get and handle_of of a
// Pool<T>, reset of a FrameAllocator, release of a PoolResource, ... `VIA(CALL)` makes the call,
// CALL being a generic lambda that takes the arena: under the wrapper's lock, or sampled. ATTR is
// [[nodiscard]] where dropping the result leaks (allocate, spawn), or nothing.
#pragma once

#include <utility>

// NAME is a member's name and VIA a callee: neither can be put in parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
// A call that may change what the arena holds: on a non-const wrapper only.
#define POOLALLOC_FORWARD(ATTR, VIA, NAME)                                                       \
  template <class... Args>                                                                       \
  requires requires(Arena & arena, Args && ... args) {                                           \
    arena.NAME(std::forward<Args>(args)...);                                                     \
  }                                                                                              \
  ATTR decltype(auto) NAME(Args&&... args) {                                                     \
    return VIA(                                                                                  \
        [&](auto& arena) -> decltype(auto) { return arena.NAME(std::forward<Args>(args)...); }); \
  }

// A query, on a const wrapper too (the arena then const).
#define POOLALLOC_FORWARD_QUERY(VIA, NAME)                \
  POOLALLOC_FORWARD(, VIA, NAME)                          \
  template <class... Args>                                \
  requires requires(const Arena& arena, Args&&... args) { \
    arena.NAME(std::forward<Args>(args)...);              \
  }                                                       \
  decltype(auto) NAME(Args&&... args) const {             \
    return VIA([&](const auto& arena) -> decltype(auto) { \
      return arena.NAME(std::forward<Args>(args)...);     \
    });                                                   \
  }

// new_object<T>(args...), new_array<T>(n): calls with a type to name.
#define POOLALLOC_FORWARD_TYPED(VIA, NAME)                                                        \
  template <class T, class... Args>                                                               \
  requires requires(Arena & arena, Args && ... args) {                                            \
    arena.template NAME<T>(std::forward<Args>(args)...);                                          \
  }                                                                                               \
  [[nodiscard]] T* NAME(Args&&... args) {                                                         \
    return VIA([&](auto& arena) { return arena.template NAME<T>(std::forward<Args>(args)...); }); \
  }
// NOLINTEND(bugprone-macro-parentheses)
