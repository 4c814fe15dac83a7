#include "decay_thread.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "central_lists.hpp"
#include "decay.hpp"
#include "options.hpp"
#include "os.hpp"
#include "span_carving.hpp"

namespace poolalloc::internal {
namespace {

// The steps use little stack (no call deeper than the locks and madvise); the pages it does not
// touch cost nothing. Large enough for glibc, which takes a program's static TLS out of it.
constexpr std::size_t kStackBytes = std::size_t{256} << 10;

// Steps that the slow paths run before the next attempt to create the thread, after `failures`
// failed: a period's worth after the first, doubling up to 64 periods'.
constexpr std::uint32_t kMaxBackoffDoublings = 6;

constinit std::atomic<bool> g_no_more_threads{false};  // exit has begun
constinit std::atomic<bool> g_forking{false};
constinit std::atomic<std::uint32_t> g_failures{0};
constinit std::atomic<std::uint32_t> g_steps_before_retry{0};

// Waits out a step interval; a request to empty the central stacks meanwhile
// (request_stack_drain) is served at once.
void pause_between_steps(std::uint64_t interval) {
  const std::uint64_t due = os_clock_ms() + interval;
  for (std::uint64_t now = os_clock_ms(); now < due; now = os_clock_ms()) {
    os_futex_wait_ms(g_stack_drain_requested, 0, due - now);
    if (g_stack_drain_requested.exchange(0) == 0) continue;
    empty_central_stacks();
    request_cache_flush();  // and the threads' bins, a few at each of their slow paths
  }
}

void* run_decay_thread(void*) {
  pthread_setname_np(pthread_self(), "poolalloc-decay");
  const std::uint64_t interval = std::max<std::uint64_t>(1, step_interval_ms());
  bool pause = true;
  for (;;) {
    if (pause) pause_between_steps(interval);
    g_stack_drain_requested.store(0, std::memory_order_relaxed);  // the step empties them
    pause = true;
    // A step that found something, or a note since the last look, calls for another step.
    if (decay_step() || g_decay_noted.exchange(false)) continue;
    int running = kRunning;
    if (!g_decay_thread_state.compare_exchange_strong(running, kSleeping)) continue;
    // A note made before the move to kSleeping was not followed by a wake: look again (see
    // note_decay_work); one made after it is followed by a wake.
    if (g_decay_noted.exchange(false)) {
      g_decay_thread_state.store(kRunning, std::memory_order_relaxed);
      continue;
    }
    // Until a slow path sets kRunning and wakes us, or a period passes: frees that stay within
    // the threads' caches wake nobody, yet an idle owner's cache must go back within two periods,
    // so asleep the thread still steps once a period (right away then: the period was its pause).
    os_futex_wait_ms(g_decay_thread_state, kSleeping, g_options.decay_ms);
    int sleeping = kSleeping;
    if (g_decay_thread_state.compare_exchange_strong(sleeping, kRunning)) pause = false;
  }
  return nullptr;
}

// With every signal blocked in the new thread (it inherits the mask of its creator): the
// program's handlers never run on it, and signals directed at the process go to its own threads.
bool create_thread() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kStackBytes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const bool created = pthread_create(&thread, &attributes, run_decay_thread, nullptr) == 0;
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return created;
}

void start() {
  const int saved_errno = errno;
  // kRunning before the thread exists: once it runs, it alone may move the state to kSleeping.
  g_decay_thread_state.store(kRunning, std::memory_order_relaxed);
  if (!create_thread()) {
    const std::uint32_t failures = g_failures.fetch_add(1, std::memory_order_relaxed);
    g_steps_before_retry.store(kStepsPerPeriod << std::min(failures, kMaxBackoffDoublings),
                               std::memory_order_relaxed);
    g_decay_thread_state.store(kFailed, std::memory_order_relaxed);
  }
  errno = saved_errno;
}

}  // namespace

void start_decay_thread() {
  if (!g_options.decay_thread || g_options.decay_ms == 0 ||
      carved_bytes() < kDecayThreadStartBytes ||
      g_no_more_threads.load(std::memory_order_relaxed) ||
      g_forking.load(std::memory_order_relaxed))
    return;
  int state = kNotStarted;
  if (g_decay_thread_state.compare_exchange_strong(state, kStarting, std::memory_order_relaxed))
    start();
}

void wake_decay_thread() {
  int state = kSleeping;
  if (g_decay_thread_state.compare_exchange_strong(state, kRunning, std::memory_order_release,
                                                   std::memory_order_relaxed))
    os_futex_wake(g_decay_thread_state, 1);
}

void decay_thread_count_step() {
  if (g_decay_thread_state.load(std::memory_order_relaxed) != kFailed) return;
  if (g_steps_before_retry.fetch_sub(1, std::memory_order_relaxed) != 1) return;
  int failed = kFailed;
  g_decay_thread_state.compare_exchange_strong(failed, kNotStarted, std::memory_order_relaxed);
}

void stop_creating_decay_thread() {
  g_no_more_threads.store(true, std::memory_order_relaxed);
}

void decay_thread_prepare_fork() {
  g_forking.store(true, std::memory_order_relaxed);
}

void decay_thread_after_fork(bool in_child) {
  // The child has only the thread that forked: the decay thread, if any, stayed behind.
  if (in_child) g_decay_thread_state.store(kNotStarted, std::memory_order_relaxed);
  g_forking.store(false, std::memory_order_relaxed);
}

}  // namespace poolalloc::internal
