// A call site in a shared library of its own, for the profile that profile_sample_program writes:
// its location lies in the library's mapping, at an address the loader chose, which pprof must
// symbolize through the mapping's file offset and build ID.
#include <libunwind.h>

extern "C" __attribute__((noinline, visibility("default"))) int profile_site_in_library(
    void** frames, int capacity) {
  const int depth = unw_backtrace(frames, capacity);
  return depth;
}
