#include "heap_profile.hpp"

#include <fcntl.h>
#include <linux/limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "heap_sampler.hpp"
#include "options.hpp"
#include "os.hpp"
#include "poolalloc/detail/message.hpp"
#include "profile_format.hpp"
#include "report_text.hpp"
#include "sample_distance.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {
namespace {

constinit std::atomic<std::uint64_t> g_sequence{0};
constinit std::atomic<bool> g_dump_pending{false};
// Estimated bytes allocated at which the next POOLALLOC_PROFILE_EVERY dump is due, and the live
// heap of the last peak dump; the thread whose compare-exchange moves one writes the dump.
constinit std::atomic<std::int64_t> g_next_every{0};
constinit std::atomic<std::int64_t> g_peak_written{0};
// One thread at a time writes the peak's file (through the same partial file beside it); a new
// peak while it writes asks it to write once more, with the samples as they are then.
constinit std::atomic<bool> g_peak_writing{false};
constinit std::atomic<bool> g_peak_due{false};

// A peak is new when the live heap passed the last one written by this much of it: a growing
// heap is written a few times per doubling, not at every sample.
constexpr std::int64_t kPeakStepShift = 4;  // 1/16

// The snapshot's stacks, one after the other, as the writer asks for them.
struct SnapshotReader {
  const SampleSnapshot* snapshot;
  std::uint32_t next = 0;
};

std::int64_t whole_count(std::int64_t units) {
  return (units + kCountUnit / 2) / kCountUnit;
}

bool next_sample(void* context, ProfileSample* out) {
  auto& reader = *static_cast<SnapshotReader*>(context);
  if (reader.next == reader.snapshot->count) return false;
  const SampledStack& stack = reader.snapshot->stacks[reader.next++];
  *out = ProfileSample{stack.frames,
                       stack.depth,
                       whole_count(stack.alloc_objects),
                       stack.alloc_bytes,
                       whole_count(stack.inuse_objects),
                       stack.inuse_bytes,
                       stack.tag == 0 ? nullptr : tag_name(stack.tag)};
  return true;
}

// Writes the sampled profile to `path`; false with errno when it could not.
bool write_to(const char* path, bool without_waiting) {
  SampleSnapshot snapshot = take_sample_snapshot(without_waiting);
  if (!snapshot.taken) {
    errno = EAGAIN;
    return false;
  }
  SnapshotReader reader{&snapshot};
  const bool written =
      write_profile_file(path, g_sample_mean.load(std::memory_order_relaxed), next_sample, &reader);
  const int error = errno;
  release_sample_snapshot(snapshot);
  errno = error;
  return written;
}

}  // namespace

bool automatic_path(char (&path)[PATH_MAX], const char* why, bool numbered) {
  detail::Message name;
  name << "." << static_cast<std::uint64_t>(os_process_id());
  if (numbered) name << "." << g_sequence.fetch_add(1, std::memory_order_relaxed);
  name << "." << why << ".pb";
  const std::size_t prefix = std::strlen(g_options.profile_prefix);
  if (prefix + name.text().size() >= sizeof path) return false;
  std::memcpy(path, g_options.profile_prefix, prefix);
  std::memcpy(path + prefix, name.text().data(), name.text().size());
  path[prefix + name.text().size()] = '\0';
  return true;
}

bool write_profile_file(const char* path, std::int64_t period, NextSample next, void* context) {
  // O_NONBLOCK: a FIFO that nobody reads fails at once (ENXIO) instead of holding the caller (a
  // malloc, perhaps) forever; the writes block as usual.
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  if (fd < 0) return false;
  fcntl(fd, F_SETFL, 0);
  const bool written = write_profile(fd, period, next, context);
  const int error = errno;
  if (close(fd) != 0 || !written) {
    if (!written) errno = error;
    return false;
  }
  return true;
}

namespace {

// A dump that the program did not ask for by a call could not be written: said on stderr, as the
// options asked for the file, once in the process's life (a program that allocates on would
// otherwise repeat it at every dump).
void report_unwritten(const char* path, int error) {
  static constinit std::atomic<bool> said{false};
  if (said.exchange(true, std::memory_order_relaxed)) return;
  const char* reason = strerrordesc_np(error);
  detail::Message message;
  message << "poolalloc: cannot write the heap profile to ";
  append_shown(message, path, 200);
  message << ": " << (reason != nullptr ? reason : "error")
          << " (later profiles that cannot be written are not reported)\n";
  message.write_to_stderr();
}

void dump_automatically(const char* why, bool without_waiting) {
  const int saved_errno = errno;
  char path[PATH_MAX];
  bool written = automatic_path(path, why, true);
  if (!written) errno = ENAMETOOLONG;
  if (written) written = write_to(path, without_waiting);
  if (!written && errno == EAGAIN && without_waiting) {
    g_dump_pending.store(true, std::memory_order_relaxed);
  } else if (!written) {
    report_unwritten(path, errno);
  }
  errno = saved_errno;
}

// The peak's file is written anew at each new peak, through a file beside it renamed over it,
// so that it always holds one whole profile: the worst moment's, after the fact.
void dump_peak() {
  const int saved_errno = errno;
  char path[PATH_MAX];
  char partial[PATH_MAX];
  if (!automatic_path(path, "peak", false) || !automatic_path(partial, "peak-partial", false)) {
    report_unwritten(g_options.profile_prefix, ENAMETOOLONG);
  } else if (!write_to(partial, false) || rename(partial, path) != 0) {
    report_unwritten(path, errno);
  }
  errno = saved_errno;
}

// A new peak: written by this thread, or by the one writing the last (which looks again once it
// has renamed its file).
void dump_peaks() {
  g_peak_due.store(true, std::memory_order_release);
  while (g_peak_due.load(std::memory_order_acquire) &&
         !g_peak_writing.exchange(true, std::memory_order_acquire)) {
    g_peak_due.store(false, std::memory_order_relaxed);
    dump_peak();
    g_peak_writing.store(false, std::memory_order_release);
  }
}

void on_profile_signal(int) {
  dump_automatically("signal", true);
}

}  // namespace

void start_heap_profile() {
  if (g_options.profile) {
    g_next_every.store(static_cast<std::int64_t>(g_options.profile_every),
                       std::memory_order_relaxed);
    set_sample_mean(static_cast<std::int64_t>(g_options.profile_sample));
  }
  // Also without POOLALLOC_PROFILE: a program may turn sampling on by a call.
  if (g_options.profile_signal != 0) {
    struct sigaction action {};
    action.sa_handler = on_profile_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(g_options.profile_signal, &action, nullptr);
  }
}

void after_sample(const SampleTotals& totals) {
  if (g_options.profile_every != 0) {
    std::int64_t due = g_next_every.load(std::memory_order_relaxed);
    if (totals.alloc_bytes >= due &&
        g_next_every.compare_exchange_strong(
            due, totals.alloc_bytes + static_cast<std::int64_t>(g_options.profile_every),
            std::memory_order_relaxed))
      dump_automatically("every", false);
  }
  if (g_options.profile_peak != 0) {
    std::int64_t written = g_peak_written.load(std::memory_order_relaxed);
    if (totals.inuse_bytes >= static_cast<std::int64_t>(g_options.profile_peak) &&
        totals.inuse_bytes >= written + (written >> kPeakStepShift) &&
        g_peak_written.compare_exchange_strong(written, totals.inuse_bytes,
                                               std::memory_order_relaxed))
      dump_peaks();
  }
  serve_pending_profile_dump();
}

void serve_pending_profile_dump() {
  if (g_dump_pending.load(std::memory_order_relaxed) &&
      g_dump_pending.exchange(false, std::memory_order_relaxed))
    dump_automatically("signal", false);
}

const char* dump_path(const char* path, char (&automatic)[PATH_MAX]) {
  if (path != nullptr) return path;
  if (automatic_path(automatic, "dump", true)) return automatic;
  errno = ENAMETOOLONG;
  return nullptr;
}

int dump_heap_profile(const char* path) {
  char automatic[PATH_MAX];
  path = dump_path(path, automatic);
  return path != nullptr && write_to(path, false) ? 0 : -1;
}

void dump_heap_profile_at_exit() {
  if (g_options.profile && g_options.profile_at_exit) dump_automatically("exit", false);
}

}  // namespace poolalloc::internal
