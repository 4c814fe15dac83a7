// The names of the POOLALLOC_* variables the library knows, and the known name nearest to one
// it does not (for "did you mean" in the report of an unknown option).
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
  kRegionSize,
  kOnError,  // the debug build's three
  kLeaks,
  kQuarantine,
  kBuildDir,  // read by the wrapper script (scripts/poolalloc) only
};

// In the order of Option, which POOLALLOC_VERBOSE lists them in.
inline constexpr std::string_view kOptionNames[] = {
    "POOLALLOC_STATS",      "POOLALLOC_STATS_FILE",  "POOLALLOC_VERBOSE",  "POOLALLOC_MAX_POOLED",
    "POOLALLOC_DECAY_MS",   "POOLALLOC_REGION_SIZE", "POOLALLOC_ON_ERROR", "POOLALLOC_LEAKS",
    "POOLALLOC_QUARANTINE", "POOLALLOC_BUILD_DIR"};

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

// Edits (insertions, deletions, substitutions, swaps of neighbours) from a to b, letter case
// aside; larger than any real distance for names longer than kLongest.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  constexpr std::size_t kLongest = 32;
  if (a.size() > kLongest || b.size() > kLongest) return kLongest + 1;
  auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
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

// The known name a mistyped POOLALLOC_* name most likely meant, compared without the prefix:
// the nearest within two edits (three for names of eight letters or more), or failing that the
// longest that it begins with or that begins with it, for four letters or more
// (POOLALLOC_QUARANTINE_SIZE: POOLALLOC_QUARANTINE). Empty if none.
// A name that starts with kOptionPrefix, without it. (remove_prefix rather than substr, which
// would make the library call libstdc++'s out_of_range thrower.)
inline std::string_view without_option_prefix(std::string_view name) {
  name.remove_prefix(kOptionPrefix.size());
  return name;
}

inline std::string_view nearest_option_name(std::string_view name) {
  const std::string_view typed = without_option_prefix(name);
  std::string_view nearest;
  std::size_t nearest_distance = SIZE_MAX;
  for (std::string_view known : kOptionNames) {
    const std::string_view suffix = without_option_prefix(known);
    const std::size_t distance = edit_distance(typed, suffix);
    const std::size_t allowed = suffix.size() >= 8 ? 3 : 2;
    if (distance <= allowed && distance < nearest_distance) {
      nearest = known;
      nearest_distance = distance;
    }
  }
  if (!nearest.empty() || typed.size() < 4) return nearest;
  for (std::string_view known : kOptionNames) {
    const std::string_view suffix = without_option_prefix(known);
    if ((typed.starts_with(suffix) || suffix.starts_with(typed)) && known.size() > nearest.size())
      nearest = known;
  }
  return nearest;
}

}  // namespace poolalloc::internal
