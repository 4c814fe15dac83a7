// Options, read once from POOLALLOC_* environment variables without allocating (docs/tuning.md
// describes them). An invalid value is reported once on stderr and the default is kept; so is
// a POOLALLOC_* variable that is a likely misspelling of an option (option_names.hpp). Any other
// POOLALLOC_* name is left alone.
#pragma once

#include <sys/types.h>
#include <climits>  // PATH_MAX

#include <cstddef>
#include <cstdint>

#include "option_names.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {

struct Options {
  std::size_t max_pooled = kLargestClassSize;       // POOLALLOC_MAX_POOLED
  std::size_t region_size = std::size_t{64} << 30;  // POOLALLOC_REGION_SIZE
  // POOLALLOC_DECAY_MS: the period after which memory that went unused goes back (decay.hpp).
  std::size_t decay_ms = 1000;
  // POOLALLOC_DECAY_THREAD: whether the decay thread may run the steps (decay_thread.hpp).
  bool decay_thread = true;
  bool verbose = false;  // POOLALLOC_VERBOSE
  // The table at exit: POOLALLOC_STATS=1, or POOLALLOC_STATS_FILE, which implies it.
  bool stats = false;
  // POOLALLOC_STATS_FILE, made absolute against the working directory at start-up; "%p" is
  // expanded at exit, in the process that exits. Empty: the table goes to stderr.
  char stats_path[PATH_MAX] = {};
  // With the table on: a copy of the stderr the program started with, where the table (or the
  // report that its file could not be written) goes at exit when fd 2 no longer refers to it
  // (programs such as coreutils close stderr itself before exiting); -1 otherwise. A daemon
  // may close the copy and reuse its number for a file of its own: only a descriptor that is
  // still that stderr, by its identity, is written to.
  int stats_fd = -1;
  dev_t stats_device = 0;
  ino_t stats_inode = 0;
  // The heap profile (docs/profiling.md): POOLALLOC_PROFILE turns sampling on, at a mean
  // distance of POOLALLOC_PROFILE_SAMPLE bytes; files are named after POOLALLOC_PROFILE_PREFIX
  // (made absolute at start-up, as stats_path); a dump on POOLALLOC_PROFILE_SIGNAL (0: none), at
  // exit, every POOLALLOC_PROFILE_EVERY bytes allocated and at each new peak of the live heap
  // above POOLALLOC_PROFILE_PEAK (0: never).
  bool profile = false;
  std::size_t profile_sample = std::size_t{512} << 10;
  char profile_prefix[PATH_MAX] = "poolalloc";
  int profile_signal = 0;
  bool profile_at_exit = true;
  std::size_t profile_every = 0;
  std::size_t profile_peak = 0;
  // The memory tags' CSV (tag_csv.hpp): POOLALLOC_TAG_CSV's path, made absolute at start-up, "%p"
  // expanded when the file is opened (empty: no CSV), and a line every POOLALLOC_TAG_CSV_MS.
  char tag_csv_path[PATH_MAX] = {};
  std::size_t tag_csv_ms = 1000;
  // Read by the debug build only:
  bool abort_on_error = true;               // POOLALLOC_ON_ERROR=abort|report
  bool leak_report = false;                 // POOLALLOC_LEAKS
  std::size_t quarantine_bytes = 16 << 20;  // POOLALLOC_QUARANTINE
  // The options whose value came from the environment, a bit per Option (for VERBOSE).
  std::uint32_t from_environment = 0;

  [[nodiscard]] bool set(Option option) const {
    return (from_environment >> static_cast<unsigned>(option) & 1) != 0;
  }
};

inline constinit Options g_options;

// The largest request the pools serve: options.max_pooled once the allocator is initialised,
// and 0 before, so that the first small request takes the path that initialises it and is then
// served as the options say.
inline constinit std::size_t g_pooled_limit = 0;

// Reads the environment into g_options and reports misspelt POOLALLOC_* variables; false while
// the C runtime has not set up `environ` yet (called again later then). Ignores the
// environment in set-user-ID programs.
bool read_options();

// POOLALLOC_VERBOSE=1: the version, the build and every option in force, on stderr.
void report_options(bool debug_build);

}  // namespace poolalloc::internal
