// Reports of detectable misuse. A pointer inside the pool region that is not a block (an
// interior or misaligned pointer, or one into a span that serves no class) would corrupt other
// blocks if accepted: it is reported in one line on stderr and the process aborts.
#pragma once

namespace poolalloc::internal {

[[noreturn]] void report_invalid_pointer(const char* operation, const void* p);

}  // namespace poolalloc::internal
