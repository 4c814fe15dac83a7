// Options, read once from POOLALLOC_* environment variables without allocating. The README
// lists them; an invalid value is reported once on stderr and the default is kept.
#pragma once

#include <cstddef>

namespace poolalloc::internal {

struct Options {
  std::size_t max_pooled = 32 * 1024;               // POOLALLOC_MAX_POOLED
  std::size_t region_size = std::size_t{64} << 30;  // POOLALLOC_REGION_SIZE
  bool stats_at_exit = false;                       // POOLALLOC_STATS
  // Read by the debug build only:
  bool abort_on_error = true;               // POOLALLOC_ON_ERROR=abort|report
  bool leak_report = false;                 // POOLALLOC_LEAKS
  std::size_t quarantine_bytes = 16 << 20;  // POOLALLOC_QUARANTINE
};

inline constinit Options g_options;

// Reads the environment into g_options; false while the C runtime has not set up `environ`
// yet (called again later then). Ignores the environment in set-user-ID programs.
bool read_options();

}  // namespace poolalloc::internal
