// Reports of detectable misuse. A pointer inside the pool region that is not a block (an
// interior or misaligned pointer, or one into a span that serves no class), a block freed twice
// and a damaged free list would corrupt other blocks if accepted: each is reported in one line
// on stderr and the process aborts.
#pragma once

namespace poolalloc::internal {

[[noreturn]] void report_invalid_pointer(const char* operation, const void* p);

// A block of class `cls` that carries its free mark (free_block_marks.hpp) passed to free (or
// delete) again, or to realloc: "double free of the 64-byte block (size class 3)".
[[noreturn]] void report_double_free(const char* operation, const void* p, unsigned cls);

// A block of class `cls` past its span's bump index (never handed out) was freed: found when the
// block goes back into its span, before the bump index could hand it out a second time.
[[noreturn]] void report_never_handed_out(const char* operation, const void* p, unsigned cls);

// A free list of class `cls` leads to `p`, which is not a free block of the class: a freed
// block was written to (a use after free, or an overflow of the block before it).
[[noreturn]] void report_corrupted_free_list(const void* p, unsigned cls);

}  // namespace poolalloc::internal
