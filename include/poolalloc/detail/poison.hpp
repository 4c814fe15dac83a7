// AddressSanitizer's manual poisoning, so that a bump allocator's given-back bytes are reported
// when touched, and its leak checker's root regions, so that memory the toolkit maps itself is
// searched for pointers to heap blocks; nothing in builds without AddressSanitizer.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)  // g++
#define POOLALLOC_DETAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define POOLALLOC_DETAIL_ASAN 1
#endif
#endif

#if defined(POOLALLOC_DETAIL_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#endif

namespace poolalloc::detail {

inline constexpr bool kAddressSanitizer =
#if defined(POOLALLOC_DETAIL_ASAN)
    true;
#else
    false;
#endif

inline void poison([[maybe_unused]] const void* begin, [[maybe_unused]] std::size_t bytes) {
#if defined(POOLALLOC_DETAIL_ASAN)
  ASAN_POISON_MEMORY_REGION(begin, bytes);
#endif
}

inline void unpoison([[maybe_unused]] const void* begin, [[maybe_unused]] std::size_t bytes) {
#if defined(POOLALLOC_DETAIL_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(begin, bytes);
#endif
}

// The leak checker searches [begin, begin + bytes) for pointers to heap blocks (the parts of it
// that are mapped and readable when it runs), as it searches the heap and the stacks but never
// memory mapped by the program: a block reachable only from a Pool<T>'s slots in its range would
// otherwise be reported as leaked.
inline void add_leak_root([[maybe_unused]] const void* begin, [[maybe_unused]] std::size_t bytes) {
#if defined(POOLALLOC_DETAIL_ASAN)
  __lsan_register_root_region(begin, bytes);
#endif
}

inline void remove_leak_root([[maybe_unused]] const void* begin,
                             [[maybe_unused]] std::size_t bytes) {
#if defined(POOLALLOC_DETAIL_ASAN)
  __lsan_unregister_root_region(begin, bytes);
#endif
}

}  // namespace poolalloc::detail
