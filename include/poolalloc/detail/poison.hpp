// AddressSanitizer's manual poisoning, so that a bump allocator's given-back bytes are reported
// when touched; nothing in builds without AddressSanitizer.
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

}  // namespace poolalloc::detail
