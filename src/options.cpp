#include "options.hpp"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "poolalloc/detail/message.hpp"
#include "size_classes.hpp"

namespace poolalloc::internal {
namespace {

std::string_view find_variable(std::string_view name) {
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.size() > name.size() && text.starts_with(name) && text[name.size()] == '=')
      return text.substr(name.size() + 1);
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

void report_invalid(std::string_view name, std::string_view text, std::string_view expected,
                    std::string_view default_value) {
  detail::Message message;
  message << "poolalloc: ignoring " << name << "=" << text << " (expected " << expected
          << "); using " << default_value << "\n";
  message.write_to(STDERR_FILENO);
}

void read_flag(std::string_view name, std::string_view off, std::string_view on, bool& option) {
  const std::string_view text = find_variable(name);
  if (text.data() == nullptr) return;
  if (text == off || text == on) {
    option = text == on;
    return;
  }
  detail::Message expected;
  expected << off << " or " << on;
  report_invalid(name, text, expected.text(), option ? on : off);
}

// A size (parse_size), or with `plain` a number without suffix, from min to max.
void read_size(std::string_view name, std::size_t min, std::size_t max, std::string_view expected,
               std::size_t& option, bool plain = false) {
  const std::string_view text = find_variable(name);
  if (text.data() == nullptr) return;
  std::size_t value = 0;
  const bool suffix_ok = !plain || (!text.empty() && text.back() >= '0' && text.back() <= '9');
  if (suffix_ok && parse_size(text, value) && value >= min && value <= max) {
    option = value;
  } else {
    detail::Message default_value;
    default_value << std::uint64_t{option};
    report_invalid(name, text, expected, default_value.text());
  }
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

}  // namespace

bool read_options() {
  if (environ == nullptr) return false;
  if (getauxval(AT_SECURE) != 0) return true;
  read_size("POOLALLOC_MAX_POOLED", 0, kLargestClassSize, "a size from 0 to 32768",
            g_options.max_pooled);
  read_size("POOLALLOC_REGION_SIZE", std::size_t{8} << 20, std::size_t{64} << 40,
            "a size from 8M to 64T, such as 16G", g_options.region_size);
  read_size("POOLALLOC_DECAY_MS", 0, std::size_t{3600} * 1000, "milliseconds from 0 to 3600000",
            g_options.decay_ms, true);
  read_size("POOLALLOC_QUARANTINE", 0, std::size_t{1} << 40, "a size such as 16M",
            g_options.quarantine_bytes);
  bool stats = false;
  read_flag("POOLALLOC_STATS", "0", "1", stats);
  struct stat initial_stderr {};
  if (stats && g_options.stats_fd < 0 && fstat(STDERR_FILENO, &initial_stderr) == 0) {
    g_options.stats_device = initial_stderr.st_dev;
    g_options.stats_inode = initial_stderr.st_ino;
    g_options.stats_fd = duplicate_stderr_high();
  }
  read_flag("POOLALLOC_LEAKS", "0", "1", g_options.leak_report);
  bool report_only = !g_options.abort_on_error;
  read_flag("POOLALLOC_ON_ERROR", "abort", "report", report_only);
  g_options.abort_on_error = !report_only;
  return true;
}

}  // namespace poolalloc::internal
