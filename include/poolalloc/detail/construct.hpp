// How the toolkit constructs a T in place from arguments (Pool<T>::spawn, new_object<T> of the
// frame and stack allocators).
#pragma once

#include <new>
#include <type_traits>
#include <utility>

namespace poolalloc::detail {

// T(args...), or T{args...} for an aggregate where the compiler has no parenthesised aggregate
// initialisation (clang before 16).
template <class T, class... Args>
T* construct(void* memory, Args&&... args) {
  static_assert(!std::is_array_v<T>,
                "poolalloc: an object of an array type: allocate arrays with new_array, or wrap "
                "the array in a struct");
  if constexpr (std::is_constructible_v<T, Args&&...>) {
    return ::new (memory) T(std::forward<Args>(args)...);
  } else {
    return ::new (memory) T{std::forward<Args>(args)...};
  }
}

}  // namespace poolalloc::detail
