// Reports of detectable misuse. A pointer inside the pool region that is not a block malloc
// handed out (an interior or misaligned pointer, one into a span that serves no class, or a
// block start past what its span's bump index reached), a block freed twice
// and a damaged free list would corrupt other blocks if accepted: each is reported in one line
// on stderr and the process aborts.
#pragma once

#include <cstddef>

namespace poolalloc::internal {

[[noreturn]] void report_invalid_pointer(const char* operation, const void* p);

// A block of bin `bin` (bins.hpp; the message names its class) that carries its free mark
// (free_block_marks.hpp) passed to free (or delete) again, or to realloc: "double free of the
// 64-byte block (size class 3)".
[[noreturn]] void report_double_free(const char* operation, const void* p, unsigned bin);

// A block outside the pool region that waits in the large-block cache (large_blocks.hpp), of
// usable size `size`, given to `operation` (free, realloc) again: "double free of the
// 262152-byte block above the pools".
[[noreturn]] void report_double_free_outside_pools(const char* operation, const void* p,
                                                   std::size_t size);

// A block of a heap-profile sample that waits as a spare (heap_samples.hpp), of `size` bytes,
// given to `operation` again: "double free of the 4096-byte block of a heap-profile sample".
[[noreturn]] void report_double_free_of_sampled_block(const char* operation, const void* p,
                                                      std::size_t size);

// A pointer outside the pool region that the system allocator did not hand out either, given to
// `operation` (free, realloc, malloc_usable_size): on Windows, where the C runtime's heap says
// so (on Linux glibc's free reports it itself).
[[noreturn]] void report_foreign_pointer(const char* operation, const void* p);

// The orphan list of bin `bin` (of its class, says the message) leads to `p`, which is not a free
// block of the class: a freed block was written to (a use after free, or an overflow of the block
// before it).
[[noreturn]] void report_corrupted_free_list(const void* p, unsigned bin);

// operator new could not allocate `size` bytes, and no C++ runtime in the process's global scope
// can throw std::bad_alloc (exports_new_delete.cpp).
[[noreturn]] void report_out_of_memory_without_cxx_runtime(std::size_t size);

}  // namespace poolalloc::internal
