// A pointer passed through a volatile, hidden from the compiler's checks of mismatched deletes,
// deletes of what new did not return and uses after free: the Windows tests make those mistakes
// on purpose, to see poolalloc report them.
#pragma once

inline void* opaque(void* p) {
  static void* volatile passed;
  passed = p;
  return passed;
}
