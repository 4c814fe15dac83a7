// What each platform builds, and what the compilers differ in.
//
// Linux builds every part. Windows (cross-built with mingw-w64, docs/windows.md) builds the core
// that a game links to replace global new: size classes, pools, thread caches, decay run by the
// program's calls, statistics, the double-free checks, options and the debug heap. It leaves out
// what rests on glibc or on the kernel's interfaces, each part saying why where it is built:
// the exports of glibc's API and LD_PRELOAD, fork's handlers, the large-block cache (glibc's chunk
// headers), the decay thread (the kernel's thread count), the heap profile (ELF, /proc/self/maps,
// signals) and the memory tags' CSV writer (a thread with every signal blocked).
#pragma once

#if defined(__linux__)
#define POOLALLOC_LINUX 1
#else
#define POOLALLOC_LINUX 0
#endif

namespace poolalloc::internal {
// Whether sampled requests are served for the heap profile (the allocator's `if constexpr`s).
inline constexpr bool kHeapProfile = POOLALLOC_LINUX;
}  // namespace poolalloc::internal

// The return address of the function that uses it: the call site of an allocation.
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define POOLALLOC_RETURN_ADDRESS() _ReturnAddress()
#else
#define POOLALLOC_RETURN_ADDRESS() __builtin_return_address(0)
#endif

// Defines `function`, which the C runtime calls as the program or library is loaded, before the
// C++ constructors of the program's own objects.
#if defined(_MSC_VER) && !defined(__clang__)
#define POOLALLOC_AT_LOAD(function)                                        \
  void function();                                                         \
  __pragma(section(".CRT$XCT", read)) __declspec(                          \
      allocate(".CRT$XCT")) void (*const function##_at_load)() = function; \
  void function()
#else
#define POOLALLOC_AT_LOAD(function) __attribute__((constructor)) void function()
#endif

// A thread-local variable. On ELF its model is initial-exec: the fast path reaches it with one
// load from the thread pointer, never through __tls_get_addr (which may allocate).
#if defined(_MSC_VER) && !defined(__clang__)
#define POOLALLOC_THREAD_LOCAL __declspec(thread)
#elif defined(__ELF__)
#define POOLALLOC_THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))
#else
#define POOLALLOC_THREAD_LOCAL __thread
#endif

// A thread-local variable of one word (a pointer or a bool) that the core reads on Windows too:
// with mingw-w64, whose g++ emulates thread-local storage, a native slot of Windows instead
// (native_thread_word.hpp says why).
#if defined(_WIN32) && defined(__GNUC__)
#include "native_thread_word.hpp"
#define POOLALLOC_THREAD_WORD(type) ::poolalloc::internal::NativeThreadWord<type>
#else
#define POOLALLOC_THREAD_WORD(type) POOLALLOC_THREAD_LOCAL type
#endif

// A hot entry point (malloc, free, the plain operator new and delete), started at a cache line's
// start, so that its fast path spans as few lines and fetch windows as it can whatever code the
// linker puts before it: a malloc that a change elsewhere had moved 48 bytes into a line ran the
// timing suite's sweep-16 6 % slower (97.6 ms against 92.2, the same code aligned).
#if defined(__GNUC__)
#define POOLALLOC_LINE_ALIGNED __attribute__((aligned(64)))
#else
#define POOLALLOC_LINE_ALIGNED
#endif

// What a shared library exports: every symbol is hidden but these (ELF). A Windows static
// library has no such notion.
#if defined(__ELF__)
#define POOLALLOC_VISIBLE __attribute__((visibility("default")))
#else
#define POOLALLOC_VISIBLE
#endif
