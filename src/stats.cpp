#include "stats.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <climits>  // PATH_MAX

#include "platform.hpp"

#if POOLALLOC_LINUX
#include <pthread.h>
#include <signal.h>
#else
#include <io.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <iterator>
#include <string_view>

#include "central_lists.hpp"
#include "command_line.hpp"
#include "large_blocks.hpp"
#include "options.hpp"
#include "os.hpp"
#include "output_buffer.hpp"
#include "pid_path.hpp"
#include "pool_region.hpp"
#include "poolalloc/detail/message.hpp"
#include "report_text.hpp"
#include "span_carving.hpp"
#include "system_forwarding.hpp"
#include "tag_budgets.hpp"
#include "tag_registry.hpp"
#include "tagged_system_blocks.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

struct ClassStats {
  std::uint64_t requests, frees, live, peak, spans, bytes_held;
};

ClassStats bin_stats(unsigned bin) {
  const ClassCounters central = class_counters(bin);
  const ClassUsage usage = class_usage(bin);
  // Blocks out of their spans are live, or wait in a thread cache or the stack of their bin. The
  // two reads are not one snapshot while other threads allocate: keep the figures in range.
  const std::uint64_t waiting = central.stacked + usage.cached;
  std::uint64_t live = central.blocks_out > waiting ? central.blocks_out - waiting : 0;
  if (live > usage.requests) live = usage.requests;
  return {usage.requests,   usage.requests - live, live,
          central.peak_out, central.spans,         central.spans * kSpanSize};
}

// A class over the bins of every registered tag: an untagged program's are its one bin's. The
// peak is then the sum of the tags' own peaks of the class.
ClassStats class_stats(unsigned cls) {
  ClassStats sum{};
  for (unsigned tag = 0, tags = registered_tags(); tag < tags; ++tag) {
    const ClassStats s = bin_stats(bin_of(tag, cls));
    sum.requests += s.requests;
    sum.frees += s.frees;
    sum.live += s.live;
    sum.peak += s.peak;
    sum.spans += s.spans;
    sum.bytes_held += s.bytes_held;
  }
  return sum;
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

// While the table is written: no cancellation (detail::NoCancellation), and no SIGPIPE for a
// reader that has gone: the signal is blocked, and one that the writing raised is taken back
// before it is unblocked. (Windows has no SIGPIPE: a write to a closed pipe fails.)
#if POOLALLOC_LINUX
class QuietOutput {
 public:
  QuietOutput() : saved_errno_(errno) {
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
    errno = saved_errno_;  // failed writes (EPIPE) are no concern of the caller's
  }
  QuietOutput(const QuietOutput&) = delete;
  QuietOutput& operator=(const QuietOutput&) = delete;

 private:
  const detail::NoCancellation whole_output_;  // constructed first, destroyed last
  int saved_errno_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};
#else
class QuietOutput {
 public:
  QuietOutput() : saved_errno_(errno) {}
  ~QuietOutput() { errno = saved_errno_; }
  QuietOutput(const QuietOutput&) = delete;
  QuietOutput& operator=(const QuietOutput&) = delete;

 private:
  int saved_errno_;
};
#endif

// The figures of a row, each right-aligned in its column. Every column after the first starts
// with a space, so that a figure as wide as its column or wider (a budget near UINT64_MAX,
// "16777216 TiB") still stands apart from the one before it.
template <std::size_t kColumns, class... Write>
detail::Message row(const int (&widths)[kColumns], const Write&... write) {
  static_assert(sizeof...(Write) == kColumns);
  detail::Message line;
  int column = 0;
  const auto cell = [&line, &widths, &column](const auto& write_figure) {
    line.padded(widths[column], [&column, &write_figure](detail::Message& m) {
      if (column > 0) m << " ";
      write_figure(m);
    });
    ++column;
  };
  (cell(write), ...);
  return line;
}
constexpr int kClassWidths[] = {5, 12, 12, 12, 12, 12, 8, 12};
// The name comes after the figures, unpadded: names are up to kMaxTagName bytes.
constexpr int kTagWidths[] = {5, 12, 12, 12, 12, 6};

template <std::size_t kColumns, class... Write>
void print_row(OutputBuffer& out, const int (&widths)[kColumns], const Write&... write) {
  detail::Message line = row(widths, write...);
  line << "\n";
  out << line;
}

// A tag's row: its figures, then its name, its control characters shown as '?' as the title
// shows them, so that a name keeps to its row (a line break) and sends the terminal nothing (an
// escape sequence).
template <class... Write>
void print_tag_row(OutputBuffer& out, std::string_view name, const Write&... write) {
  detail::Message line = row(kTagWidths, write...);
  line << "  ";
  append_shown(line, name, kMaxTagName);
  line << "\n";
  out << line;
}

static_assert(kSpanSize == 128 << 10, "the legend names the span size");
constexpr std::string_view kClassLegend[] = {
    "  per size class: requests and frees count the blocks handed out and given back,",
    "  live those out now, peak the most out of their spans at once (live or cached),",
    "  spans the 128 KiB spans carved for the class, held their size"};
constexpr std::string_view kTagLegend[] = {
    "  per memory tag: live the bytes and blocks charged to it now, peak the most",
    "  bytes out at once, over the times it went over its budget"};

template <std::size_t kLines>
void print_lines(OutputBuffer& out, const std::string_view (&lines)[kLines]) {
  for (const std::string_view line : lines) {
    out.append(line);
    out.append("\n");
  }
}

// The longest table there can be, so that it is written in one write(2) (statistics.md): a row
// for every size class and for every tag, named with kMaxTagName bytes, each figure as wide as a
// figure gets (a count of 20 digits; a size is at most 14 characters, "16777215.9 TiB"), with the
// space before it after the first column; the title and the totals, one Message each; the
// legends and the headers.
template <std::size_t kColumns>
constexpr std::size_t longest_row(const int (&widths)[kColumns]) {
  std::size_t bytes = 1;  // "\n"
  for (std::size_t column = 0; column < kColumns; ++column)
    bytes += std::max(static_cast<std::size_t>(widths[column]), kWidestFigure + (column > 0));
  return bytes;
}
template <std::size_t kLines>
constexpr std::size_t bytes_of(const std::string_view (&lines)[kLines]) {
  std::size_t bytes = 0;
  for (const std::string_view line : lines) bytes += line.size() + 1;
  return bytes;
}
// A tag's row ends with its name, after two spaces.
constexpr std::size_t kLongestTagRow = longest_row(kTagWidths) + 2 + kMaxTagName;
constexpr std::size_t kMaxTableBytes =
    2 * detail::Message::kCapacity + bytes_of(kClassLegend) + bytes_of(kTagLegend) +
    (1 + kClassCount) * longest_row(kClassWidths) + (1 + kTagCount) * kLongestTagRow;
static_assert(kMaxTableBytes <= 64 << 10, "statistics.md says a table fits in 64 KiB");

template <class Value>
auto figure(const Value& value) {
  return [&value](detail::Message& m) { m << value; };
}
auto bytes(std::uint64_t value) {
  return [value](detail::Message& m) { append_bytes(m, value); };
}
auto exact_bytes(std::uint64_t value) {
  return [value](detail::Message& m) { append_exact_bytes(m, value); };
}

// A row per registered tag, the untagged one first, once a program registered one: an untagged
// program's table is as it was.
void print_tags(OutputBuffer& out) {
  const unsigned tags = registered_tags();
  if (tags == 1) return;
  print_lines(out, kTagLegend);
  print_tag_row(out, "name", figure("tag"), figure("live"), figure("blocks"), figure("peak"),
                figure("budget"), figure("over"));
  for (unsigned tag = 0; tag < tags; ++tag) {
    poolalloc_tag_stats s{};
    if (!collect_tag_stats(static_cast<int>(tag), s)) continue;
    const std::uint64_t id = tag;
    const auto budget = [&s](detail::Message& m) {
      if (s.budget_bytes == POOLALLOC_TAG_NO_BUDGET) {
        m << "none";
      } else {
        append_bytes(m, s.budget_bytes);
      }
    };
    print_tag_row(out, s.name, figure(id), bytes(s.live_bytes), figure(s.live_blocks),
                  bytes(s.peak_bytes), budget, figure(s.over_budget));
  }
}

void print_snapshot(OutputBuffer& out) {
  Snapshot snapshot;
  take_snapshot(snapshot);
  detail::Message title;
  title << "poolalloc statistics of pid " << static_cast<std::uint64_t>(os_process_id());
  const CommandLine command;
  if (!command.text().empty()) {
    title << ": ";
    append_shown(title, command.text(), CommandLine::kShown);
  }
  title << "\n";
  out << title;
  print_lines(out, kClassLegend);
  print_row(out, kClassWidths, figure("class"), figure("block size"), figure("requests"),
            figure("frees"), figure("live"), figure("peak"), figure("spans"), figure("held"));
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const ClassStats& s = snapshot.classes[cls];
    if (s.requests == 0 && s.spans == 0) continue;
    const std::uint64_t index = cls;
    print_row(out, kClassWidths, figure(index), exact_bytes(class_size(cls)), figure(s.requests),
              figure(s.frees), figure(s.live), figure(s.peak), figure(s.spans),
              bytes(s.bytes_held));
  }
  print_tags(out);
  const poolalloc_stats& totals = snapshot.totals;
  detail::Message line;
  line << "pooled requests: " << totals.pooled_requests << "\n";
  line << "system-forwarded requests: " << totals.system_requests << " (";
  append_bytes(line, totals.system_bytes);
  line << ")";
  if constexpr (POOLALLOC_LINUX) {  // Windows has no large-block cache (platform.hpp)
    const LargeBlockStats large = large_block_stats();
    line << "\nlarge blocks kept for reuse: ";
    append_bytes(line, large.bytes);
    line << " (" << large.blocks << " blocks; " << large.reused << " requests served from them)";
  }
  line << "\nthread caches in use: " << totals.thread_caches << "\nheld by the size classes: ";
  append_bytes(line, totals.bytes_held);
  line << "\nretained empty spans: ";
  append_bytes(line, totals.retained_bytes);
  line << " (kept for reuse)\nresident in RAM, of both: ";
  append_bytes(line, totals.resident_bytes);
  line << "\n";
  out << line;
}

void print_table(int fd) {
  OutputBuffer out(fd, kMaxTableBytes);
  print_snapshot(out);
  out.flush();
}

#if POOLALLOC_LINUX
// Whether fd is open on the file that stderr was when the options were read.
bool refers_to_initial_stderr(int fd) {
  struct stat now {};
  return fd >= 0 && fstat(fd, &now) == 0 && now.st_dev == g_options.stats_device &&
         now.st_ino == g_options.stats_inode;
}

// The stderr the program started with, through fd 2 or the copy taken at start-up, whichever
// still refers to it; -1 if neither does: never a file the program opened since under either
// number.
int initial_stderr() {
  if (refers_to_initial_stderr(STDERR_FILENO)) return STDERR_FILENO;
  if (refers_to_initial_stderr(g_options.stats_fd)) return g_options.stats_fd;
  return -1;
}
#else
// Windows: stderr as it is at exit (options.cpp keeps no copy of it).
int initial_stderr() {
  return 2;
}
#endif

// The statistics file, opened for appending; -1 with errno when it cannot be.
int open_stats_file(const char* path) {
#if POOLALLOC_LINUX
  // O_NONBLOCK: a FIFO that nobody reads fails at once (ENXIO) instead of holding up the
  // exit; the writes block as usual.
  const int fd =
      open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  if (fd >= 0) fcntl(fd, F_SETFL, O_APPEND);
  return fd;
#else
  return _open(path, _O_WRONLY | _O_APPEND | _O_CREAT | _O_BINARY | _O_NOINHERIT,
               _S_IREAD | _S_IWRITE);
#endif
}

// The text of errno's `error`.
const char* error_text(int error) {
#if POOLALLOC_LINUX
  return strerrordesc_np(error);
#else
  return std::strerror(error);
#endif
}

// The table into the statistics file, opened for it alone and appended to: processes that
// share a path write one table after the other. A file that cannot be written is said in one
// line on the stderr the program started with.
void print_to_stats_file() {
  char path[PATH_MAX];
  const bool expanded = expand_pid_path(g_options.stats_path, path);
  int error = ENAMETOOLONG;
  if (expanded) {
    const int fd = open_stats_file(path);
    if (fd >= 0) {
      OutputBuffer out(fd, kMaxTableBytes);
      print_snapshot(out);
      const bool written = out.flush();
      error = errno;
      close(fd);
      if (written) return;
    } else {
      error = errno;
    }
  }
  const int fd = initial_stderr();
  if (fd < 0) return;
  detail::Message message;
  message << "poolalloc: cannot write the statistics to ";
  append_shown(message, expanded ? path : g_options.stats_path, 200);
  const char* reason = error_text(error);
  message << ": " << (reason != nullptr ? reason : "error") << "\n";
  OutputBuffer out(fd);
  out << message;
  out.flush();
}

#if POOLALLOC_LINUX
// The large blocks that wait in the cache (large_blocks.hpp) are chunks in use to glibc, and free
// memory to the program, as glibc's own free chunks are: glibc's figures count them free. Their
// chunks' bytes, at most the `in_use` glibc counts (the two are read apart while other threads
// free and allocate).
struct CachedChunks {
  std::size_t count, bytes;
};
CachedChunks cached_chunks(std::size_t in_use) {
  const LargeBlockStats large = large_block_stats();
  return {large.blocks, std::min<std::size_t>(large.chunk_bytes, in_use)};
}

int saturated(std::size_t value) {
  return value > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(value);
}
#endif

}  // namespace

void print_stats(int fd) {
  const QuietOutput quiet;
  print_table(fd);
}

#if POOLALLOC_LINUX
void print_malloc_stats() {
  const QuietOutput quiet;
  print_table(STDERR_FILENO);
  // glibc's report is its own text, written to stderr as it reads its arenas: the cached large
  // blocks go back to it first (as malloc_trim gives them back), so that it counts them free.
  release_large_blocks();
  system_malloc_stats();
}
#endif

void print_stats_at_exit() {
  if (!g_options.stats) return;
  const QuietOutput quiet;
  if (g_options.stats_path[0] != '\0') {
    print_to_stats_file();
  } else if (const int fd = initial_stderr(); fd >= 0) {
    print_table(fd);
  }
}

poolalloc_stats collect_stats() {
  Snapshot snapshot;
  take_snapshot(snapshot);
  return snapshot.totals;
}

bool collect_tag_stats(int id, poolalloc_tag_stats& out) {
  if (!is_registered_tag(id)) return false;
  const auto tag = static_cast<unsigned>(id);
  const TaggedSystemUsage system = tagged_system_usage(tag);
  out = {};
  out.live_blocks = system.blocks;
  out.live_bytes = system.bytes;
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const std::uint64_t live = bin_stats(bin_of(tag, cls)).live;
    out.live_blocks += live;
    out.live_bytes += live * class_size(cls);
  }
  // The peak counts what waits in caches and stacks too, so it is at least what is live; but the
  // two are read apart while other threads allocate.
  out.peak_bytes = std::max(tag_peak_bytes(tag), out.live_bytes);
  out.name = tag_name(tag);
  const TagBudget budget = tag_budget(tag);
  out.budget_bytes = budget.bytes;
  out.over_budget = budget.crossings;
  return true;
}

#if POOLALLOC_LINUX
struct mallinfo2 pooled_mallinfo2() {
  // The pools' figures added to glibc's for what was forwarded to it.
  struct mallinfo2 info = system_mallinfo2();
  const CachedChunks cached = cached_chunks(info.uordblks);
  info.ordblks += cached.count;
  info.uordblks -= cached.bytes;
  info.fordblks += cached.bytes;
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
  if (options != 0) return EINVAL;  // as glibc answers, errno untouched
  // The stream's writes are cancellation points: the document is written whole.
  const detail::NoCancellation whole_document;
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
  // pools go in as one more heap, and into the totals. glibc's main heap, the first, holds the
  // cached large blocks: they go into its free "rest", and into the totals'.
  std::size_t heaps = 0;
  for (const char* at = document; (at = std::strstr(at, "<heap nr=")) != nullptr; ++at) ++heaps;
  const char* totals = nullptr;
  for (const char* at = document; (at = std::strstr(at, "</heap>\n")) != nullptr; ++at)
    totals = at + std::strlen("</heap>\n");
  std::size_t fast_count = 0, fast_size = 0, rest_count = 0, rest_size = 0, mmap_size = 0;
  std::size_t current = 0, max = 0, aspace = 0, mprotect = 0;
  int mmap_count = 0;
  const char* main_heap = std::strstr(document, "<total type=\"fast\" ");
  std::size_t main_fast = 0, main_rest_count = 0, main_rest_size = 0, main_current = 0;
  int main_rest_line = 0, main_after_rest = 0;
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
                                  &mmap_size, &current, &max, &aspace, &mprotect) == 10 &&
                      main_heap != nullptr && main_heap < totals &&
                      std::sscanf(main_heap,
                                  "<total type=\"fast\" count=\"%*u\" size=\"%zu\"/>\n%n"
                                  "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n%n"
                                  "<system type=\"current\" size=\"%zu\"/>\n",
                                  &main_fast, &main_rest_line, &main_rest_count, &main_rest_size,
                                  &main_after_rest, &main_current) == 4 &&
                      main_current >= main_fast + main_rest_size;
  if (!parsed) {
    fputs(document, stream);
    free(document);  // NOLINT
    return ferror(stream) ? -1 : 0;
  }
  const CachedChunks cached = cached_chunks(main_current - main_fast - main_rest_size);
  const char* main_rest = main_heap + main_rest_line;
  fwrite(document, 1, static_cast<std::size_t>(main_rest - document), stream);
  fprintf(stream, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
          main_rest_count + cached.count, main_rest_size + cached.bytes);
  const char* after_main_rest = main_heap + main_after_rest;
  fwrite(after_main_rest, 1, static_cast<std::size_t>(totals - after_main_rest), stream);
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
          fast_count, fast_size, rest_count + free_count + cached.count,
          rest_size + free_bytes + cached.bytes, mmap_count, mmap_size, current + held, max + held,
          aspace + held, mprotect + held);
  return ferror(stream) ? -1 : 0;
}
#endif

}  // namespace poolalloc::internal
