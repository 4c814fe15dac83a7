// How a wrapper (Synchronized, Tracked) forwards the interface of the arena it wraps: one member
// template per name, offered where the arena has a call of that name that takes the arguments (a
// requires-clause), so that a wrapper has exactly what its arena has: get and handle_of of a
// Pool<T>, reset of a FrameAllocator, release of a PoolResource, ... `VIA(CALL)` makes the call,
// CALL being a generic lambda that takes the arena: under the wrapper's lock, or sampled. ATTR is
// [[nodiscard]] where dropping the result leaks (allocate, spawn), or nothing.
//
// The return type is written out, the arena's call's, not deduced: to decide whether the const
// overload of a query could take the arguments, the compiler then reads the arena's declaration
// only. A deduced one made it compile the call (and, through a wrapper of a wrapper, the arena's
// walk with the caller's function) even where the non-const overload is the one called: a
// function that changes the objects given to Tracked<Synchronized<Pool<T>>>::for_each failed to
// compile on the const overload's behalf.
#pragma once

#include <utility>

namespace poolalloc::detail {
// T, named through the call's argument types: an expression on it in a member template's return
// type is then checked when the template is, not with the wrapper's class.
template <class T, class...>
struct DependentOn {
  using type = T;
};
}  // namespace poolalloc::detail

// NOLINTBEGIN(bugprone-macro-parentheses)
// The wrapper's Arena, as a member template taking ARGS names it in its return type (ARGS is a
// pack's name: it cannot be put in parentheses).
#define POOLALLOC_ARENA(ARGS) typename ::poolalloc::detail::DependentOn<Arena, ARGS...>::type

// NAME is a member's name and VIA a callee: neither can be put in parentheses.
// A call that may change what the arena holds: on a non-const wrapper only.
#define POOLALLOC_FORWARD(ATTR, VIA, NAME)                                                       \
  template <class... Args>                                                                       \
  requires requires(Arena & arena, Args && ... args) {                                           \
    arena.NAME(std::forward<Args>(args)...);                                                     \
  }                                                                                              \
  ATTR auto NAME(Args&&... args)                                                                 \
      ->decltype(std::declval<POOLALLOC_ARENA(Args)&>().NAME(std::forward<Args>(args)...)) {     \
    return VIA(                                                                                  \
        [&](auto& arena) -> decltype(auto) { return arena.NAME(std::forward<Args>(args)...); }); \
  }

// A query, on a const wrapper too (the arena then const).
#define POOLALLOC_FORWARD_QUERY(VIA, NAME)                                                     \
  POOLALLOC_FORWARD(, VIA, NAME)                                                               \
  template <class... Args>                                                                     \
  requires requires(const Arena& arena, Args&&... args) {                                      \
    arena.NAME(std::forward<Args>(args)...);                                                   \
  }                                                                                            \
  auto NAME(Args&&... args) const->decltype(std::declval<const POOLALLOC_ARENA(Args)&>().NAME( \
      std::forward<Args>(args)...)) {                                                          \
    return VIA([&](const auto& arena) -> decltype(auto) {                                      \
      return arena.NAME(std::forward<Args>(args)...);                                          \
    });                                                                                        \
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
