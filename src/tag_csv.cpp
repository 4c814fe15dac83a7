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
#include "output_buffer.hpp"
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

// Written before the thread starts, read-only afterwards.
int g_fd = -1;
int g_writer_pid = 0;
std::uint64_t g_opened_ms = 0;

// One line at a time: the thread's and the one at exit (lock.hpp's order: a line reads the
// statistics under it).
Lock g_line_lock;
unsigned g_tags_in_header = 0;  // under g_line_lock

// A tag's name as a CSV field: quoted, its quotes doubled, when it holds a comma, a quote or a
// line break.
void append_field(OutputBuffer& out, std::string_view name) {
  if (name.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(name);
    return;
  }
  out.append("\"");
  for (std::size_t quote; (quote = name.find('"')) != std::string_view::npos;) {
    out.append(name.substr(0, quote + 1));
    out.append("\"");
    name.remove_prefix(quote + 1);
  }
  out.append(name);
  out.append("\"");
}

void write_line() {
  LockGuard guard(g_line_lock);
  OutputBuffer out(g_fd);
  const unsigned tags = registered_tags();
  if (tags != g_tags_in_header) {
    out.append("ms");
    for (unsigned tag = 0; tag < tags; ++tag) {
      out.append(",");
      append_field(out, tag_name(tag));
    }
    out.append("\n");
    g_tags_in_header = tags;
  }
  detail::Message field;
  field << os_clock_ms() - g_opened_ms;
  out << field;
  for (unsigned tag = 0; tag < tags; ++tag) {
    poolalloc_tag_stats stats{};
    collect_tag_stats(static_cast<int>(tag), stats);
    field = {};
    field << "," << stats.live_bytes;
    out << field;
  }
  out.append("\n");
  out.flush();
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

void report_failure(std::string_view what, const char* path, int error) {
  detail::Message message;
  message << "poolalloc: " << what;
  append_shown(message, path, 200);
  const char* reason = strerrordesc_np(error);
  message << ": " << (reason != nullptr ? reason : "error") << "\n";
  message.write_to_stderr();
}

}  // namespace

void start_tag_csv() {
  if (g_options.tag_csv_path[0] == '\0' || g_fd >= 0) return;
  char path[PATH_MAX];
  if (!expand_pid_path(g_options.tag_csv_path, path)) {
    report_failure("cannot write the memory tags' CSV to ", g_options.tag_csv_path, ENAMETOOLONG);
    return;
  }
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    report_failure("cannot write the memory tags' CSV to ", path, errno);
    return;
  }
  g_fd = fd;
  g_writer_pid = os_process_id();
  g_opened_ms = os_clock_ms();
  if (const int error = create_thread(); error != 0)
    report_failure("no thread to write the memory tags' CSV every interval to ", path, error);
}

void write_tag_csv_at_exit() {
  if (g_fd < 0 || os_process_id() != g_writer_pid) return;
  write_line();
}

}  // namespace poolalloc::internal
