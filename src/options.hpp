// Options, read once from POOLALLOC_* environment variables without allocating. The README
// lists them; an invalid value is reported once on stderr and the default is kept.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "size_classes.hpp"

namespace poolalloc::internal {

struct Options {
  std::size_t max_pooled = kLargestClassSize;       // POOLALLOC_MAX_POOLED
  std::size_t region_size = std::size_t{64} << 30;  // POOLALLOC_REGION_SIZE
  // POOLALLOC_DECAY_MS: the period after which memory that went unused goes back (decay.hpp).
  std::size_t decay_ms = 1000;
  // POOLALLOC_STATS=1: a copy of the stderr the program started with, where the table goes at
  // exit when fd 2 no longer refers to it (programs such as coreutils close stderr itself before
  // exiting); -1 otherwise. A daemon may close the copy and reuse its number for a file of its
  // own: the table goes only to a descriptor that is still that stderr, by its identity.
  int stats_fd = -1;
  dev_t stats_device = 0;
  ino_t stats_inode = 0;
  // Read by the debug build only:
  bool abort_on_error = true;               // POOLALLOC_ON_ERROR=abort|report
  bool leak_report = false;                 // POOLALLOC_LEAKS
  std::size_t quarantine_bytes = 16 << 20;  // POOLALLOC_QUARANTINE
};

inline constinit Options g_options;

// The largest request the pools serve: options.max_pooled once the allocator is initialised,
// and 0 before, so that the first small request takes the path that initialises it and is then
// served as the options say.
inline constinit std::size_t g_pooled_limit = 0;

// Reads the environment into g_options; false while the C runtime has not set up `environ`
// yet (called again later then). Ignores the environment in set-user-ID programs.
bool read_options();

}  // namespace poolalloc::internal
