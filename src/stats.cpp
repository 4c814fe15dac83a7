#include "stats.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "central_lists.hpp"
#include "options.hpp"
#include "pool_region.hpp"
#include "poolalloc/detail/message.hpp"
#include "span_carving.hpp"
#include "system_forwarding.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

struct ClassStats {
  std::uint64_t requests, frees, live, peak, spans, bytes_held;
};

ClassStats class_stats(unsigned cls) {
  const ClassCounters central = class_counters(cls);
  const ClassUsage usage = class_usage(cls);
  // Blocks out of their spans are live, or wait in a thread cache or the stack of their class. The
  // two reads are not one snapshot while other threads allocate: keep the figures in range.
  const std::uint64_t waiting = central.stacked + usage.cached;
  std::uint64_t live = central.blocks_out > waiting ? central.blocks_out - waiting : 0;
  if (live > usage.requests) live = usage.requests;
  return {usage.requests,   usage.requests - live, live,
          central.peak_out, central.spans,         central.spans * kSpanSize};
}

// Every class read once; the totals are the sums of those same figures.
struct Snapshot {
  ClassStats classes[kClassCount];
  poolalloc_stats totals;
};

void take_snapshot(Snapshot& snapshot) {
  poolalloc_stats& totals = snapshot.totals;
  totals = {};
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const ClassStats& s = snapshot.classes[cls] = class_stats(cls);
    totals.pooled_requests += s.requests;
    totals.pooled_frees += s.frees;
    totals.pooled_live += s.live;
    totals.spans_in_use += s.spans;
    totals.bytes_held += s.bytes_held;
  }
  totals.pooled_peak = peak_blocks_out();
  totals.system_requests = g_system_counters.requests.load(std::memory_order_relaxed);
  totals.system_bytes = g_system_counters.bytes.load(std::memory_order_relaxed);
  totals.thread_caches = live_thread_caches();
  totals.resident_bytes = resident_bytes();
  totals.retained_bytes = retained_bytes();
}

// While the table is written: no cancellation (write is a cancellation point, and glibc's
// malloc_stats disables it too), and no SIGPIPE for a reader that has gone: the signal is
// blocked, and one that the writing raised is taken back before it is unblocked.
class QuietOutput {
 public:
  QuietOutput() : saved_errno_(errno) {
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state_);
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_mask_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~QuietOutput() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      const timespec no_wait{};
      while (sigtimedwait(&pipe, nullptr, &no_wait) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    pthread_setcancelstate(cancel_state_, nullptr);
    errno = saved_errno_;  // failed writes (EPIPE) are no concern of the caller's
  }
  QuietOutput(const QuietOutput&) = delete;
  QuietOutput& operator=(const QuietOutput&) = delete;

 private:
  int saved_errno_;
  int cancel_state_ = PTHREAD_CANCEL_ENABLE;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

template <class... Values>
void print_row(int fd, const Values&... values) {
  detail::Message line;
  ((line.padded(13, [&](detail::Message& m) { m << values; })), ...);
  line << "\n";
  line.write_to(fd);
}

void print_total(int fd, std::string_view label, std::uint64_t value) {
  detail::Message line;
  line << label << ": " << value << "\n";
  line.write_to(fd);
}

void print_snapshot(int fd) {
  Snapshot snapshot;
  take_snapshot(snapshot);
  print_total(fd, "poolalloc statistics, pid", static_cast<std::uint64_t>(getpid()));
  print_row(fd, "class", "block size", "requests", "frees", "live", "peak", "spans", "bytes held");
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const ClassStats& s = snapshot.classes[cls];
    if (s.requests == 0 && s.spans == 0) continue;
    print_row(fd, std::uint64_t{cls}, class_size(cls), s.requests, s.frees, s.live, s.peak, s.spans,
              s.bytes_held);
  }
  const poolalloc_stats& totals = snapshot.totals;
  print_total(fd, "system-forwarded requests", totals.system_requests);
  print_total(fd, "system-forwarded bytes", totals.system_bytes);
  print_total(fd, "thread caches in use", totals.thread_caches);
  print_total(fd, "bytes held by the pools", totals.bytes_held);
  print_total(fd, "bytes of retained empty spans", totals.retained_bytes);
  print_total(fd, "resident bytes of the pools", totals.resident_bytes);
  print_total(fd, "pooled requests", totals.pooled_requests);
}

// Whether fd is open on the file that stderr was when the options were read.
bool refers_to_initial_stderr(int fd) {
  struct stat now {};
  return fd >= 0 && fstat(fd, &now) == 0 && now.st_dev == g_options.stats_device &&
         now.st_ino == g_options.stats_inode;
}

int saturated(std::size_t value) {
  return value > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(value);
}

}  // namespace

void print_stats(int fd) {
  const QuietOutput quiet;
  print_snapshot(fd);
}

void print_stats_at_exit() {
  if (g_options.stats_fd < 0) return;
  const QuietOutput quiet;
  if (refers_to_initial_stderr(STDERR_FILENO)) {
    print_snapshot(STDERR_FILENO);
  } else if (refers_to_initial_stderr(g_options.stats_fd)) {
    print_snapshot(g_options.stats_fd);
  }
}

poolalloc_stats collect_stats() {
  Snapshot snapshot;
  take_snapshot(snapshot);
  return snapshot.totals;
}

struct mallinfo2 pooled_mallinfo2() {
  // The pools' figures added to glibc's for what was forwarded to it.
  struct mallinfo2 info = system_mallinfo2();
  std::uint64_t live_bytes = 0;
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    live_bytes += class_stats(cls).live * class_size(cls);
  // The spans of the classes and the retained empty spans: both are memory the pools hold.
  const std::size_t held = carved_bytes() + retained_bytes();
  if (live_bytes > held) live_bytes = held;  // a snapshot taken while other threads allocate
  info.arena += held;
  info.uordblks += live_bytes;
  info.fordblks += held - live_bytes;
  return info;
}

struct mallinfo pooled_mallinfo() {
  const struct mallinfo2 wide = pooled_mallinfo2();
  struct mallinfo info {};
  info.arena = saturated(wide.arena);
  info.ordblks = saturated(wide.ordblks);
  info.smblks = saturated(wide.smblks);
  info.hblks = saturated(wide.hblks);
  info.hblkhd = saturated(wide.hblkhd);
  info.usmblks = saturated(wide.usmblks);
  info.fsmblks = saturated(wide.fsmblks);
  info.uordblks = saturated(wide.uordblks);
  info.fordblks = saturated(wide.fordblks);
  info.keepcost = saturated(wide.keepcost);
  return info;
}

int pooled_malloc_info(int options, FILE* stream) {
  if (options != 0) {
    errno = EINVAL;
    return -1;
  }
  // Everything is read first, and no allocator lock is held while stdio runs: the stream's
  // buffer and the memory stream below are allocated through malloc.
  Snapshot snapshot;
  take_snapshot(snapshot);
  char* document = nullptr;
  std::size_t length = 0;
  FILE* memory = open_memstream(&document, &length);
  if (memory == nullptr) return system_malloc_info(0, stream);
  const int status = system_malloc_info(0, memory);
  if (fclose(memory) != 0 || status != 0 || document == nullptr) {
    free(document);  // NOLINT: open_memstream's buffer comes from malloc
    return system_malloc_info(0, stream);
  }
  // glibc's document: <malloc version="1">, one <heap> per arena, the totals, </malloc>. The
  // pools go in as one more heap, and into the totals.
  std::size_t heaps = 0;
  for (const char* at = document; (at = std::strstr(at, "<heap nr=")) != nullptr; ++at) ++heaps;
  const char* totals = nullptr;
  for (const char* at = document; (at = std::strstr(at, "</heap>\n")) != nullptr; ++at)
    totals = at + std::strlen("</heap>\n");
  std::size_t fast_count = 0, fast_size = 0, rest_count = 0, rest_size = 0, mmap_size = 0;
  std::size_t current = 0, max = 0, aspace = 0, mprotect = 0;
  int mmap_count = 0;
  const bool parsed = totals != nullptr &&
                      std::sscanf(totals,
                                  "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n"
                                  "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
                                  "<total type=\"mmap\" count=\"%d\" size=\"%zu\"/>\n"
                                  "<system type=\"current\" size=\"%zu\"/>\n"
                                  "<system type=\"max\" size=\"%zu\"/>\n"
                                  "<aspace type=\"total\" size=\"%zu\"/>\n"
                                  "<aspace type=\"mprotect\" size=\"%zu\"/>\n",
                                  &fast_count, &fast_size, &rest_count, &rest_size, &mmap_count,
                                  &mmap_size, &current, &max, &aspace, &mprotect) == 10;
  if (!parsed) {
    fputs(document, stream);
    free(document);  // NOLINT
    return ferror(stream) ? -1 : 0;
  }
  fwrite(document, 1, static_cast<std::size_t>(totals - document), stream);
  free(document);  // NOLINT
  std::size_t free_count = 0, free_bytes = 0;
  fprintf(stream, "<heap nr=\"%zu\">\n<sizes>\n", heaps);
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const ClassStats& s = snapshot.classes[cls];
    if (s.spans == 0) continue;
    const std::size_t blocks = s.spans * (kSpanSize / class_size(cls));
    const std::size_t count = blocks > s.live ? blocks - s.live : 0;
    free_count += count;
    free_bytes += count * class_size(cls);
    fprintf(stream, "  <size from=\"%u\" to=\"%u\" total=\"%zu\" count=\"%zu\"/>\n",
            class_size(cls), class_size(cls), count * class_size(cls), count);
  }
  const std::size_t held = snapshot.totals.bytes_held;
  fprintf(stream,
          "</sizes>\n"
          "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
          "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"max\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n"
          "<aspace type=\"mprotect\" size=\"%zu\"/>\n"
          "</heap>\n",
          free_count, free_bytes, held, held, held, held);
  fprintf(stream,
          "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n"
          "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
          "<total type=\"mmap\" count=\"%d\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"max\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n"
          "<aspace type=\"mprotect\" size=\"%zu\"/>\n"
          "</malloc>\n",
          fast_count, fast_size, rest_count + free_count, rest_size + free_bytes, mmap_count,
          mmap_size, current + held, max + held, aspace + held, mprotect + held);
  return ferror(stream) ? -1 : 0;
}

}  // namespace poolalloc::internal
