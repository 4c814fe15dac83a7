#include "options.hpp"

#include <cstdlib>  // environ

#include "platform.hpp"

#if POOLALLOC_LINUX
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstring>
#include <string_view>

#include "os.hpp"
#include "output_buffer.hpp"
#include "poolalloc/detail/message.hpp"
#include "poolalloc/poolalloc.h"
#include "report_text.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {
namespace {

constexpr std::size_t kShownValue = 80;  // bytes of a variable shown in a report

std::string_view find_variable(Option option) {
  const std::string_view name = option_name(option);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    // Set but empty counts as unset: `POOLALLOC_STATS= cmd` is how a shell script clears it.
    if (text.size() > name.size() + 1 && text.starts_with(name) && text[name.size()] == '=')
      return text.data() + name.size() + 1;
  }
  return {};
}

// A decimal number of bytes with an optional K, M, G or T suffix (powers of 1024).
bool parse_size(std::string_view text, std::size_t& value) {
  if (text.empty()) return false;
  std::size_t shift = 0;
  switch (text.back()) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift != 0) text.remove_suffix(1);
  if (text.empty()) return false;
  std::size_t number = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || number > (SIZE_MAX >> shift) / 10) return false;
    number = number * 10 + static_cast<std::size_t>(c - '0');
  }
  if (number > (SIZE_MAX >> shift)) return false;
  value = number << shift;
  return true;
}

void report_invalid(Option option, std::string_view text, std::string_view expected,
                    std::string_view default_value) {
  detail::Message message;
  message << "poolalloc: ignoring " << option_name(option) << "=";
  append_shown(message, text, kShownValue);
  message << " (expected " << expected << "); using " << default_value << "\n";
  message.write_to_stderr();
}

void taken(Option option) {
  g_options.from_environment |= std::uint32_t{1} << static_cast<unsigned>(option);
}

void read_flag(Option option, std::string_view off, std::string_view on, bool& value) {
  const std::string_view text = find_variable(option);
  if (text.data() == nullptr) return;
  if (text == off || text == on) {
    value = text == on;
    taken(option);
    return;
  }
  detail::Message expected;
  expected << off << " or " << on;
  report_invalid(option, text, expected.text(), value ? on : off);
}

// A size (parse_size), or with `plain` a number without suffix, from min to max.
void read_size(Option option, std::size_t min, std::size_t max, std::string_view expected,
               std::size_t& value, bool plain = false) {
  const std::string_view text = find_variable(option);
  if (text.data() == nullptr) return;
  std::size_t parsed = 0;
  const bool suffix_ok = !plain || (!text.empty() && text.back() >= '0' && text.back() <= '9');
  if (suffix_ok && parse_size(text, parsed) && parsed >= min && parsed <= max) {
    value = parsed;
    taken(option);
  } else {
    detail::Message default_value;
    default_value << std::uint64_t{value};
    report_invalid(option, text, expected, default_value.text());
  }
}

// Whether `text` is an absolute path: from the root, or on Windows also from a drive ("C:\\",
// "C:/") or a share ("\\\\server\\share").
bool is_absolute(std::string_view text) {
#if POOLALLOC_LINUX
  return text.front() == '/';
#else
  return text.front() == '/' || text.front() == '\\' ||
         (text.size() >= 3 && text[1] == ':' && (text[2] == '\\' || text[2] == '/'));
#endif
}

// `text` into `path`, after the working directory when it is relative (without one it stays
// relative); false, with `path` undefined, when it does not fit.
bool make_absolute(std::string_view text, char (&path)[PATH_MAX]) {
  char absolute[PATH_MAX];
  std::size_t length = 0;
  if (!is_absolute(text) && os_working_directory(absolute, sizeof absolute)) {
    length = std::strlen(absolute);
    if (absolute[length - 1] != '/' && absolute[length - 1] != '\\') absolute[length++] = '/';
  }
  if (length + text.size() >= sizeof absolute) return false;
  std::memcpy(absolute + length, text.data(), text.size());
  absolute[length + text.size()] = '\0';
  std::memcpy(path, absolute, length + text.size() + 1);
  return true;
}

// The longest path taken, in the words of the report that refuses a longer one: PATH_MAX less
// its terminating byte (Windows' PATH_MAX is MAX_PATH).
#if POOLALLOC_LINUX
static_assert(PATH_MAX == 4096);
constexpr std::string_view kPathLimit = "a path of at most 4095 bytes";
#else
static_assert(PATH_MAX == 260);
constexpr std::string_view kPathLimit = "a path of at most 259 bytes";
#endif

// A path (POOLALLOC_STATS_FILE, POOLALLOC_PROFILE_PREFIX) into `path`, a relative one made
// absolute so that a program that changes directory still writes where it was asked to. Set but
// empty: as unset. `fallback` is what `path` holds when the value is refused.
void read_path(Option option, char (&path)[PATH_MAX], std::string_view fallback) {
  const std::string_view text = find_variable(option);
  if (text.empty()) return;
  if (make_absolute(text, path)) {
    taken(option);
    return;
  }
  std::memcpy(path, fallback.data(), fallback.size());
  path[fallback.size()] = '\0';
  report_invalid(option, text, kPathLimit, fallback.empty() ? "none" : fallback);
}

#if !POOLALLOC_LINUX
// The options of what Windows leaves out (platform.hpp): the decay thread, the heap profile and
// the memory tags' CSV writer.
constexpr Option kNotOnWindows[] = {
    Option::kDecayThread,   Option::kProfile,       Option::kProfileSample, Option::kProfilePrefix,
    Option::kProfileSignal, Option::kProfileAtExit, Option::kProfileEvery,  Option::kProfilePeak,
    Option::kTagCsv,        Option::kTagCsvMs};

// Those set are said to be ignored, at start-up, whether POOLALLOC_VERBOSE is set or not.
void report_options_not_on_windows() {
  for (const Option option : kNotOnWindows) {
    const std::string_view text = find_variable(option);
    if (text.empty()) continue;
    detail::Message message;
    message << "poolalloc: ignoring " << option_name(option) << "=";
    append_shown(message, text, kShownValue);
    message << " (not on Windows)\n";
    message.write_to_stderr();
  }
}
#endif

#if POOLALLOC_LINUX
// POOLALLOC_PROFILE_SIGNAL: a signal's number, or its name with or without "SIG" (USR2).
void read_signal() {
  const std::string_view text = find_variable(Option::kProfileSignal);
  if (text.data() == nullptr) return;
  std::string_view name = text;
  if (begins_with(name, "SIG")) name.remove_prefix(3);
  int number = 0;
  for (int candidate = 1; candidate < NSIG && number == 0; ++candidate) {
    const char* abbreviation = sigabbrev_np(candidate);
    if (abbreviation != nullptr && name == abbreviation) number = candidate;
  }
  std::size_t parsed = 0;
  if (number == 0 && parse_size(text, parsed) && text.back() >= '0' && text.back() <= '9' &&
      parsed >= 1 && parsed < static_cast<std::size_t>(NSIG))
    number = static_cast<int>(parsed);
  // Not one that cannot be caught, nor one the kernel sends for a fault: a handler that writes a
  // profile and returns would make a crashing program fault again forever.
  constexpr int kRefused[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE,
                              SIGILL,  SIGTRAP, SIGSYS,  SIGABRT};
  if (number == 0 ||
      std::find(std::begin(kRefused), std::end(kRefused), number) != std::end(kRefused)) {
    report_invalid(
        Option::kProfileSignal, text,
        "a signal such as USR2 or 12, not one of KILL STOP SEGV BUS FPE ILL TRAP SYS ABRT", "none");
    return;
  }
  g_options.profile_signal = number;
  taken(Option::kProfileSignal);
}

// A copy of stderr on a number programs do not look at: high, below the soft descriptor limit,
// so that the program's own first open() still gets 3. The hint is capped at FD_SETSIZE (1024),
// so a huge limit neither grows the descriptor table nor takes a number select() cannot use;
// where the numbers up there are taken, lower ones are tried.
int duplicate_stderr_high() {
  constexpr rlim_t kCap = 1024;
  constexpr rlim_t kMargin = 16;
  struct rlimit limit {};
  rlim_t top = kCap;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < top) top = limit.rlim_cur;
  for (rlim_t hint = top > kMargin + 3 ? top - kMargin : 3;; hint /= 2) {
    if (hint < 3) hint = 3;
    const int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, static_cast<int>(hint));
    if (fd >= 0 || hint == 3) return fd;
  }
}

// The stderr the table at exit is for (or the report that its file could not be written): its
// identity and a copy of it.
void keep_initial_stderr() {
  struct stat initial_stderr {};
  if (g_options.stats_fd >= 0 || fstat(STDERR_FILENO, &initial_stderr) != 0) return;
  g_options.stats_device = initial_stderr.st_dev;
  g_options.stats_inode = initial_stderr.st_ino;
  g_options.stats_fd = duplicate_stderr_high();
}
#endif

// Every POOLALLOC_* variable that is a likely misspelling of an option (misspelt_option), with
// the option it most likely meant; after kMostShown of them, one line counts the rest. Other
// names that no option has are a program's own, and are left alone: the library is silent by
// default.
void report_misspelt_options() {
  constexpr std::uint64_t kMostShown = 8;
  std::uint64_t misspelt = 0;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with(kOptionPrefix)) continue;
    const std::string_view name(text.data(), std::min(text.find('='), text.size()));
    if (is_option_name(name)) continue;
    const std::string_view meant = misspelt_option(name);
    if (meant.empty() || ++misspelt > kMostShown) continue;
    detail::Message message;
    message << "poolalloc: unknown option ";
    append_shown(message, text, kShownValue);
    message << " ignored (did you mean " << meant << "?)\n";
    message.write_to_stderr();
  }
  if (misspelt > kMostShown) {
    detail::Message message;
    message << "poolalloc: " << misspelt - kMostShown
            << " more misspelt POOLALLOC_* options ignored\n";
    message.write_to_stderr();
  }
}

// One line of POOLALLOC_VERBOSE's block: the name, the value in force, and a note on it.
void report_line(OutputBuffer& out, Option option, const detail::Message& value,
                 std::string_view note) {
  detail::Message line;
  line << "  " << option_name(option);
  for (std::size_t column = option_name(option).size(); column < 26; ++column) line << " ";
  line << value.text() << note << "\n";
  out << line;
}

std::string_view default_note(Option option) {
  return g_options.set(option) ? "" : " (default)";
}

// The debug build's options: in the release build, only those set, said to be unused.
void report_debug_line(OutputBuffer& out, Option option, const detail::Message& value,
                       bool debug_build) {
  if (debug_build) {
    report_line(out, option, value, default_note(option));
  } else if (g_options.set(option)) {
    report_line(out, option, value, " (read by the debug build only)");
  }
}

#if POOLALLOC_LINUX
// The heap profile's options (docs/profiling.md).
void report_profile_options(OutputBuffer& out) {
  detail::Message value;
  value << (g_options.profile ? "1" : "0");
  report_line(out, Option::kProfile, value, default_note(Option::kProfile));
  value = {};
  append_exact_bytes(value, g_options.profile_sample);
  report_line(out, Option::kProfileSample, value, default_note(Option::kProfileSample));
  value = {};
  append_shown(value, g_options.profile_prefix, 2 * kShownValue);
  report_line(out, Option::kProfilePrefix, value, default_note(Option::kProfilePrefix));
  value = {};
  const char* signal = sigabbrev_np(g_options.profile_signal);  // null for 0
  if (signal == nullptr) {
    value << "unset";
  } else {
    value << "SIG" << signal;
  }
  report_line(out, Option::kProfileSignal, value, default_note(Option::kProfileSignal));
  value = {};
  value << (g_options.profile_at_exit ? "1" : "0");
  report_line(out, Option::kProfileAtExit, value, default_note(Option::kProfileAtExit));
  value = {};
  append_exact_bytes(value, g_options.profile_every);
  report_line(out, Option::kProfileEvery, value, default_note(Option::kProfileEvery));
  value = {};
  append_exact_bytes(value, g_options.profile_peak);
  report_line(out, Option::kProfilePeak, value, default_note(Option::kProfilePeak));
}

// The memory tags' CSV (tag_csv.hpp).
void report_tag_csv_options(OutputBuffer& out) {
  detail::Message value;
  if (g_options.tag_csv_path[0] == '\0') {
    value << "unset";
  } else {
    append_shown(value, g_options.tag_csv_path, 2 * kShownValue);
  }
  report_line(out, Option::kTagCsv, value, default_note(Option::kTagCsv));
  value = {};
  value << std::uint64_t{g_options.tag_csv_ms} << " ms";
  report_line(out, Option::kTagCsvMs, value, default_note(Option::kTagCsvMs));
}
#endif

}  // namespace

bool read_options() {
  if (environ == nullptr) return false;
#if POOLALLOC_LINUX
  if (getauxval(AT_SECURE) != 0) return true;
#endif
  const detail::NoCancellation whole_reports;  // the library may be loaded by any thread
  read_size(Option::kMaxPooled, 0, kLargestClassSize, "a size from 0 to 32768",
            g_options.max_pooled);
  read_size(Option::kRegionSize, std::size_t{8} << 20, std::size_t{64} << 40,
            "a size from 8M to 64T, such as 16G", g_options.region_size);
  read_size(Option::kDecayMs, 0, std::size_t{3600} * 1000, "milliseconds from 0 to 3600000",
            g_options.decay_ms, true);
#if POOLALLOC_LINUX
  read_flag(Option::kDecayThread, "0", "1", g_options.decay_thread);
#else
  report_options_not_on_windows();
#endif
  read_size(Option::kQuarantine, 0, std::size_t{1} << 40, "a size such as 16M",
            g_options.quarantine_bytes);
  read_flag(Option::kVerbose, "0", "1", g_options.verbose);
  read_path(Option::kStatsFile, g_options.stats_path, "");
  read_flag(Option::kStats, "0", "1", g_options.stats);
  if (g_options.stats_path[0] != '\0') g_options.stats = true;
#if POOLALLOC_LINUX
  if (g_options.stats) keep_initial_stderr();
#endif
  read_flag(Option::kLeaks, "0", "1", g_options.leak_report);
#if POOLALLOC_LINUX  // the heap profile and the tags' CSV are Linux's (platform.hpp)
  read_flag(Option::kProfile, "0", "1", g_options.profile);
  read_size(Option::kProfileSample, 1, std::size_t{1} << 40, "a size from 1 to 1T, such as 512K",
            g_options.profile_sample);
  read_path(Option::kProfilePrefix, g_options.profile_prefix, "poolalloc");
  // The default prefix is relative too: to the directory the program started in.
  if (g_options.profile && !g_options.set(Option::kProfilePrefix))
    make_absolute("poolalloc", g_options.profile_prefix);
  read_signal();
  read_flag(Option::kProfileAtExit, "0", "1", g_options.profile_at_exit);
  read_size(Option::kProfileEvery, 0, std::size_t{1} << 50, "a size such as 1G",
            g_options.profile_every);
  read_size(Option::kProfilePeak, 0, std::size_t{1} << 50, "a size such as 256M",
            g_options.profile_peak);
  read_path(Option::kTagCsv, g_options.tag_csv_path, "");
  read_size(Option::kTagCsvMs, 1, std::size_t{3600} * 1000, "milliseconds from 1 to 3600000",
            g_options.tag_csv_ms, true);
#endif
  bool report_only = !g_options.abort_on_error;
  read_flag(Option::kOnError, "abort", "report", report_only);
  g_options.abort_on_error = !report_only;
  report_misspelt_options();
  return true;
}

void report_options(bool debug_build) {
  if (!g_options.verbose) return;
  const detail::NoCancellation whole_block;
  OutputBuffer out(STDERR_FILENO);
  detail::Message line;
  line << "poolalloc " << POOLALLOC_VERSION_STRING << ", " << (debug_build ? "debug" : "release")
       << " build, pid " << static_cast<std::uint64_t>(os_process_id()) << ", options in force:\n";
  out << line;
  const bool to_file = g_options.stats_path[0] != '\0';
  detail::Message value;
  value << (g_options.stats ? "1" : "0");
  report_line(out, Option::kStats, value,
              to_file ? " (implied by POOLALLOC_STATS_FILE)" : default_note(Option::kStats));
  value = {};
  if (to_file) {
    append_shown(value, g_options.stats_path, 2 * kShownValue);
  } else {
    value << (g_options.stats ? "unset: the table goes to stderr" : "unset");
  }
  report_line(out, Option::kStatsFile, value, default_note(Option::kStatsFile));
  value = {};
  value << "1";
  report_line(out, Option::kVerbose, value, "");
  value = {};
  append_exact_bytes(value, g_options.max_pooled);
  report_line(out, Option::kMaxPooled, value, default_note(Option::kMaxPooled));
  value = {};
  value << std::uint64_t{g_options.decay_ms} << " ms";
  report_line(out, Option::kDecayMs, value, default_note(Option::kDecayMs));
#if POOLALLOC_LINUX  // Windows has none (platform.hpp), whatever the option says
  value = {};
  value << (g_options.decay_thread ? "1" : "0");
  report_line(out, Option::kDecayThread, value, default_note(Option::kDecayThread));
#endif
  value = {};
  append_exact_bytes(value, g_options.region_size);
  report_line(out, Option::kRegionSize, value, default_note(Option::kRegionSize));
#if POOLALLOC_LINUX
  report_profile_options(out);
  report_tag_csv_options(out);
#endif
  value = {};
  value << (g_options.abort_on_error ? "abort" : "report");
  report_debug_line(out, Option::kOnError, value, debug_build);
  value = {};
  value << (g_options.leak_report ? "1" : "0");
  report_debug_line(out, Option::kLeaks, value, debug_build);
  value = {};
  append_exact_bytes(value, g_options.quarantine_bytes);
  report_debug_line(out, Option::kQuarantine, value, debug_build);
  out.flush();
}

}  // namespace poolalloc::internal
