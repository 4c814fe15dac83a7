#include "tag_csv.hpp"

#include <fcntl.h>
#include <linux/limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "lock.hpp"
#include "options.hpp"
#include "os.hpp"
#include "pid_path.hpp"
#include "poolalloc/detail/message.hpp"
#include "report_text.hpp"
#include "stats.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {
namespace {

// The thread sleeps and formats one line at a time: a small stack suffices (glibc takes the
// program's static TLS out of it too).
constexpr std::size_t kStackBytes = std::size_t{256} << 10;

// The longest line, so that every line goes out in one write(2): a header of every tag, each
// name kMaxTagName quotes (which CSV doubles, inside quotes), and under it, written with it, the
// line of figures, each at its widest (20 digits).
constexpr std::size_t kLongestHeader = 2 + kTagCount * (1 + 2 + 2 * kMaxTagName) + 1;
constexpr std::size_t kLongestLine =
    kLongestHeader + kWidestFigure + kTagCount * (1 + kWidestFigure) + 1;

// Mapped at start, only when the option is set: the file's path, and the line being written.
struct Output {
  char path[PATH_MAX];
  char line[kLongestLine];
  std::size_t length;  // of line
};

static_assert(sizeof(Output) <= 44 << 10, "tuning.md says 44 KiB");

// Written before the thread starts, read-only afterwards.
Output* g_output = nullptr;
int g_writer_pid = 0;
std::uint64_t g_opened_ms = 0;

// One line at a time: the thread's and the one at exit (lock.hpp's order: a line reads the
// statistics under it). It guards g_output's line too.
Lock g_line_lock;
unsigned g_tags_in_header = 0;  // under g_line_lock
bool g_failure_said = false;    // under g_line_lock

void append(std::string_view text) {
  Output& out = *g_output;
  text = text.substr(0, sizeof out.line - out.length);  // kLongestLine: never cut
  std::memcpy(out.line + out.length, text.data(), text.size());
  out.length += text.size();
}

// A tag's name as a CSV field: quoted, its quotes doubled, when it holds a comma, a quote or a
// line break.
void append_field(std::string_view name) {
  if (name.find_first_of(",\"\r\n") == std::string_view::npos) {
    append(name);
    return;
  }
  append("\"");
  for (std::size_t quote; (quote = name.find('"')) != std::string_view::npos;) {
    append(name.substr(0, quote + 1));
    append("\"");
    name.remove_prefix(quote + 1);
  }
  append(name);
  append("\"");
}

void report_failure(std::string_view what, const char* path, int error) {
  detail::Message message;
  message << "poolalloc: " << what;
  append_shown(message, path, 200);
  const char* reason = strerrordesc_np(error);
  message << ": " << (reason != nullptr ? reason : "error") << "\n";
  message.write_to_stderr();
}

// The line into the file, opened for it alone and closed after it: no descriptor is held between
// lines, so that a program that closes descriptors it did not open and opens its own files under
// their numbers, as daemons do, never gets a line in them. True once it is written whole.
bool write_out() {
  // O_NONBLOCK: a FIFO that nobody reads fails at once (ENXIO) instead of holding up the line,
  // or the exit; the write blocks as usual.
  const int fd = open(g_output->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return false;
  fcntl(fd, F_SETFL, O_APPEND);
  std::string_view rest(g_output->line, g_output->length);
  while (!rest.empty()) {
    const ssize_t n = write(fd, rest.data(), rest.size());
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      if (n == 0) errno = EIO;
      break;
    }
  }
  const int error = errno;  // why it failed, through close
  close(fd);
  errno = error;
  return rest.empty();
}

void write_line() {
  LockGuard guard(g_line_lock);
  g_output->length = 0;
  const unsigned tags = registered_tags();
  if (tags != g_tags_in_header) {
    append("ms");
    for (unsigned tag = 0; tag < tags; ++tag) {
      append(",");
      append_field(tag_name(tag));
    }
    append("\n");
  }
  detail::Message field;
  field << os_clock_ms() - g_opened_ms;
  append(field.text());
  for (unsigned tag = 0; tag < tags; ++tag) {
    poolalloc_tag_stats stats{};
    collect_tag_stats(static_cast<int>(tag), stats);
    field = {};
    field << "," << stats.live_bytes;
    append(field.text());
  }
  append("\n");
  if (write_out()) {
    g_tags_in_header = tags;
  } else if (!g_failure_said) {
    g_failure_said = true;
    report_failure("cannot write the memory tags' CSV to ", g_output->path, errno);
  }
}

// A word that nothing wakes: the thread sleeps on it.
constinit std::atomic<int> g_never_woken{0};

// Sleeps until the deadline (the futex may return early).
void sleep_until(std::uint64_t due_ms) {
  for (std::uint64_t now = os_clock_ms(); now < due_ms; now = os_clock_ms())
    os_futex_wait_ms(g_never_woken, 0, due_ms - now);
}

void* run_writer(void*) {
  pthread_setname_np(pthread_self(), "poolalloc-csv");
  // Due times follow from the start, so that the lines do not drift by the time each takes.
  for (std::uint64_t due = g_opened_ms + g_options.tag_csv_ms;; due += g_options.tag_csv_ms) {
    sleep_until(due);
    write_line();
  }
  return nullptr;
}

// With every signal blocked in the new thread, which inherits its creator's mask: the program's
// handlers never run on it. 0, or pthread_create's error.
int create_thread() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kStackBytes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int error = pthread_create(&thread, &attributes, run_writer, nullptr);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return error;
}

}  // namespace

void start_tag_csv() {
  if (g_options.tag_csv_path[0] == '\0' || g_output != nullptr) return;
  char path[PATH_MAX];
  if (!expand_pid_path(g_options.tag_csv_path, path)) {
    report_failure("cannot write the memory tags' CSV to ", g_options.tag_csv_path, ENAMETOOLONG);
    return;
  }
  // Created, or emptied, once; each line opens it again.
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    report_failure("cannot write the memory tags' CSV to ", path, errno);
    return;
  }
  close(fd);
  auto* output = static_cast<Output*>(os_map(sizeof(Output)));
  if (output == nullptr) {
    report_failure("cannot write the memory tags' CSV to ", path, errno);
    return;
  }
  std::memcpy(output->path, path, sizeof path);
  g_output = output;
  g_writer_pid = os_process_id();
  g_opened_ms = os_clock_ms();
  if (const int error = create_thread(); error != 0)
    report_failure("no thread to write the memory tags' CSV every interval to ", path, error);
}

void write_tag_csv_at_exit() {
  if (g_output == nullptr || os_process_id() != g_writer_pid) return;
  write_line();
}

}  // namespace poolalloc::internal
