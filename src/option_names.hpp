// The names of the POOLALLOC_* variables the library knows, and the option that a name it does
// not know most likely misspells (reported with "did you mean"; any other name is left alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace poolalloc::internal {

enum class Option : unsigned {
  kStats,
  kStatsFile,
  kVerbose,
  kMaxPooled,
  kDecayMs,
  kDecayThread,
  kRegionSize,
  kOnError,  // the debug build's three
  kLeaks,
  kQuarantine,
  kBuildDir,  // read by the wrapper script (scripts/poolalloc) only
  kProfile,   // the heap profile's (heap_profile.hpp)
  kProfileSample,
  kProfilePrefix,
  kProfileSignal,
  kProfileAtExit,
  kProfileEvery,
  kProfilePeak,
  kTagCsv,  // the memory tags' CSV (tag_csv.hpp)
  kTagCsvMs,
};

// In the order of Option, which POOLALLOC_VERBOSE lists them in.
inline constexpr std::string_view kOptionNames[] = {
    "POOLALLOC_STATS",           "POOLALLOC_STATS_FILE",     "POOLALLOC_VERBOSE",
    "POOLALLOC_MAX_POOLED",      "POOLALLOC_DECAY_MS",       "POOLALLOC_DECAY_THREAD",
    "POOLALLOC_REGION_SIZE",     "POOLALLOC_ON_ERROR",       "POOLALLOC_LEAKS",
    "POOLALLOC_QUARANTINE",      "POOLALLOC_BUILD_DIR",      "POOLALLOC_PROFILE",
    "POOLALLOC_PROFILE_SAMPLE",  "POOLALLOC_PROFILE_PREFIX", "POOLALLOC_PROFILE_SIGNAL",
    "POOLALLOC_PROFILE_AT_EXIT", "POOLALLOC_PROFILE_EVERY",  "POOLALLOC_PROFILE_PEAK",
    "POOLALLOC_TAG_CSV",         "POOLALLOC_TAG_CSV_MS"};

inline constexpr std::string_view kOptionPrefix = "POOLALLOC_";

constexpr std::string_view option_name(Option option) {
  return kOptionNames[static_cast<unsigned>(option)];
}

inline bool is_option_name(std::string_view name) {
  for (std::string_view known : kOptionNames) {
    if (name == known) return true;
  }
  return false;
}

inline char upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

// Edits (insertions, deletions, substitutions, swaps of neighbours) from a to b, letter case
// aside; larger than any real distance for names longer than kLongest.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  constexpr std::size_t kLongest = 32;
  if (a.size() > kLongest || b.size() > kLongest) return kLongest + 1;
  std::uint8_t d[kLongest + 1][kLongest + 1];
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<std::uint8_t>(i);
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<std::uint8_t>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = upper(a[i - 1]) == upper(b[j - 1]);
      std::size_t best = d[i - 1][j - 1] + (same ? 0u : 1u);
      if (d[i - 1][j] + 1u < best) best = d[i - 1][j] + 1u;
      if (d[i][j - 1] + 1u < best) best = d[i][j - 1] + 1u;
      if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) &&
          upper(a[i - 2]) == upper(b[j - 1]) && d[i - 2][j - 2] + 1u < best)
        best = d[i - 2][j - 2] + 1u;
      d[i][j] = static_cast<std::uint8_t>(best);
    }
  }
  return d[a.size()][b.size()];
}

// A name that starts with kOptionPrefix, without it. (remove_prefix rather than substr, which
// would make the library call libstdc++'s out_of_range thrower.)
inline std::string_view without_option_prefix(std::string_view name) {
  name.remove_prefix(kOptionPrefix.size());
  return name;
}

// Whether `text` begins with `start`, letter case aside.
inline bool begins_with(std::string_view text, std::string_view start) {
  if (text.size() < start.size()) return false;
  for (std::size_t i = 0; i < start.size(); ++i) {
    if (upper(text[i]) != upper(start[i])) return false;
  }
  return true;
}

// The option a POOLALLOC_* name that names none most likely meant: a likely misspelling.
// Compared without the prefix and letter case aside, the typed name T is a misspelling of
// option O when
//   - T is within two edits of O (an insertion, deletion or substitution of a letter, or a
//     swap of two neighbours), and the edits are fewer than half of O's letters (STAT, stats,
//     VERBOES, STATSFILE; a short name is not two edits from every other short name), or
//   - one of T and O begins with the other, the shorter having four letters or more (DECAY,
//     QUARANTINE_SIZE).
// Of several, the nearest (fewest edits), then the first in kOptionNames. Empty for any other
// name: a program's or a script's own variable (POOLALLOC_LIB, POOLALLOC_HOME) is none of
// poolalloc's business, and is left alone.
inline std::string_view misspelt_option(std::string_view name) {
  constexpr std::size_t kShortestBeginning = 4;
  const std::string_view typed = without_option_prefix(name);
  std::string_view meant;
  std::size_t meant_distance = SIZE_MAX;
  for (std::string_view known : kOptionNames) {
    const std::string_view option = without_option_prefix(known);
    const std::size_t distance = edit_distance(typed, option);
    const bool typo = distance <= 2 && 2 * distance < option.size();
    const std::string_view shorter = typed.size() < option.size() ? typed : option;
    const bool same_beginning = shorter.size() >= kShortestBeginning &&
                                (begins_with(typed, option) || begins_with(option, typed));
    if ((typo || same_beginning) && distance < meant_distance) {
      meant = known;
      meant_distance = distance;
    }
  }
  return meant;
}

}  // namespace poolalloc::internal
