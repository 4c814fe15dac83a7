// POOLALLOC_COLD, in an attribute list: a function that reports misuse and aborts is kept out of
// line and apart from the hot code, so that the check calling it costs its callers a compare and
// a branch. POOLALLOC_NOINLINE: a path taken only with debug checks stays out of the inlined
// fast path it branches from. POOLALLOC_PURE: a function that changes nothing (it reads memory
// and returns), so that a loop calling it may still keep what it reads of the pool in registers
// and take conditions on it out of the loop. Only g++ and clang know these attributes; other
// compilers get nothing, since MSVC warns of attributes it does not recognise (C5030). `[[noreturn,
// ]]` is valid C++.
#pragma once

#if defined(__GNUC__)
#define POOLALLOC_COLD gnu::cold, gnu::noinline
#define POOLALLOC_NOINLINE gnu::noinline
#define POOLALLOC_PURE gnu::pure
#else
#define POOLALLOC_COLD
#define POOLALLOC_NOINLINE
#define POOLALLOC_PURE
#endif
