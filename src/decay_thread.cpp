#include "decay_thread.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/single_threaded.h>

#include <algorithm>
#include <cerrno>

#include "decay.hpp"
#include "decay_requests.hpp"
#include "options.hpp"
#include "os.hpp"

namespace poolalloc::internal {
namespace {

// The steps use little stack (no call deeper than the locks and madvise); the pages it does not
// touch cost nothing. Large enough for glibc, which takes a program's static TLS out of it.
constexpr std::size_t kStackBytes = std::size_t{256} << 10;

// Periods to wait before the next attempt to create the thread, after `failures` failed: one
// after the first, doubling up to 64.
constexpr std::uint32_t kMaxBackoffDoublings = 6;

constinit std::atomic<bool> g_no_more_threads{false};  // exit has begun
constinit std::atomic<bool> g_forking{false};
constinit std::atomic<std::uint32_t> g_failures{0};
constinit std::atomic<std::uint64_t> g_retry_at_ms{0};  // os_clock_ms() of the next attempt
// When a slow path may next count the process's threads (os_clock_ms), how long it waits after a
// count that found the main thread alone (program_runs_threads), and the kernel thread id of the
// decay thread that left last (kExited).
constinit std::atomic<std::uint64_t> g_next_look_ms{0};
constinit std::atomic<std::uint64_t> g_next_look_wait_ms{4};  // a coarse clock's tick
constinit std::atomic<int> g_exited_thread_id{0};

// Waits out a step interval; a request to empty the central stacks meanwhile
// (request_stack_drain) is served at once.
void pause_between_steps(std::uint64_t interval) {
  const std::uint64_t due = os_clock_ms() + interval;
  for (std::uint64_t now = os_clock_ms(); now < due; now = os_clock_ms()) {
    os_futex_wait_ms(g_stack_drain_requested, 0, due - now);
    empty_requested_stacks(UINT32_MAX);
  }
}

// The decay thread's view: the program has its main thread alone, besides this one. Where the
// kernel's count cannot be had (0), the program is taken to run threads: the thread stays.
bool program_back_to_one_thread() {
  return os_thread_count() == 2;
}

// The program went back to one thread: what malloc_trim(0) gives back of the pools goes back now,
// so that the thread left alone starts from its live set (its own looks at the clock run the
// steps from now on), and the decay thread leaves.
void leave() {
  release_unused_memory();
  g_exited_thread_id.store(os_thread_id(), std::memory_order_relaxed);
  g_decay_thread_state.store(kExited, std::memory_order_release);
}

void* run_decay_thread(void*) {
  pthread_setname_np(pthread_self(), "poolalloc-decay");
  const std::uint64_t interval = std::max<std::uint64_t>(1, step_interval_ms());
  bool pause = true;
  for (;;) {
    if (pause) pause_between_steps(interval);
    if (program_back_to_one_thread()) break;
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
    g_decay_thread_state.compare_exchange_strong(sleeping, kRunning);
    pause = false;
  }
  leave();
  return nullptr;
}

bool real_time_policy(int policy) {
  constexpr int kSchedDeadline = 6;  // <linux/sched.h>'s SCHED_DEADLINE
  return policy == SCHED_FIFO || policy == SCHED_RR || policy == kSchedDeadline;
}

// The CPUs the process could run on when the library started (taskset's, a container's), before
// the program pinned any thread of its own: the decay thread's.
constinit cpu_set_t g_startup_cpus{};
constinit bool g_startup_cpus_known = false;

// How the decay thread is scheduled, set by glibc before the thread runs: at SCHED_OTHER (unless
// `inherit_policy`) on the process's start-up CPUs. A thread that took SCHED_FIFO and the
// affinity of a game loop pinned to one core would run only when that loop yields.
bool schedule_beside_the_program(pthread_attr_t& attributes, bool inherit_policy) {
  sched_param normal{};
  normal.sched_priority = 0;
  const bool policy_set =
      inherit_policy || (pthread_attr_setinheritsched(&attributes, PTHREAD_EXPLICIT_SCHED) == 0 &&
                         pthread_attr_setschedpolicy(&attributes, SCHED_OTHER) == 0 &&
                         pthread_attr_setschedparam(&attributes, &normal) == 0);
  return policy_set &&
         (!g_startup_cpus_known ||
          pthread_attr_setaffinity_np(&attributes, sizeof g_startup_cpus, &g_startup_cpus) == 0);
}

bool try_to_create(bool inherit_policy) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kStackBytes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const bool created = schedule_beside_the_program(attributes, inherit_policy) &&
                       pthread_create(&thread, &attributes, run_decay_thread, nullptr) == 0;
  pthread_attr_destroy(&attributes);
  return created;
}

// With every signal blocked in the new thread (it inherits the mask of its creator): the
// program's handlers never run on it, and signals directed at the process go to its own threads.
// Where the policy cannot be set (a SCHED_IDLE creator may not raise it), a creator that is not
// real-time passes its own on.
bool create_thread() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const bool created =
      try_to_create(false) || (!real_time_policy(sched_getscheduler(0)) && try_to_create(true));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return created;
}

void start() {
  // kRunning before the thread exists: once it runs, it alone may move the state to kSleeping.
  g_decay_thread_state.store(kRunning, std::memory_order_relaxed);
  if (!create_thread()) {
    const std::uint32_t failures = g_failures.fetch_add(1, std::memory_order_relaxed);
    g_retry_at_ms.store(
        os_clock_ms() + (g_options.decay_ms << std::min(failures, kMaxBackoffDoublings)),
        std::memory_order_relaxed);
    g_decay_thread_state.store(kFailed, std::memory_order_relaxed);
  }
}

// Whether the program runs threads of its own: glibc has seen a thread created, and the kernel
// counts more than one thread (or cannot count them). glibc says so as pthread_create begins,
// whose own mallocs may come here before the thread exists; and a program whose threads have
// all ended stays so for glibc. So a count that finds the main thread alone is made again after
// a wait that doubles from a clock tick up to a step interval: a stat now and then, where one
// per slow path would cost every call.
bool program_runs_threads() {
  if (__libc_single_threaded) return false;
  const std::uint64_t now = os_clock_ms();
  std::uint64_t next = g_next_look_ms.load(std::memory_order_relaxed);
  const std::uint64_t wait = g_next_look_wait_ms.load(std::memory_order_relaxed);
  if (now < next ||
      !g_next_look_ms.compare_exchange_strong(next, now + wait, std::memory_order_relaxed))
    return false;
  const int threads = os_thread_count();
  if (threads == 1)
    g_next_look_wait_ms.store(std::min(wait * 2, std::max<std::uint64_t>(1, step_interval_ms())),
                              std::memory_order_relaxed);
  return threads != 1;
}

void start_unless_running() {
  if (!g_options.decay_thread || g_options.decay_ms == 0 ||
      g_no_more_threads.load(std::memory_order_relaxed) ||
      g_forking.load(std::memory_order_relaxed) || !program_runs_threads())
    return;
  int state = g_decay_thread_state.load(std::memory_order_acquire);
  // The thread that left must be gone before another starts.
  if (state == kExited) {
    const int previous = g_exited_thread_id.load(std::memory_order_relaxed);
    if (!os_thread_exited(os_process_id(), previous) ||
        !g_decay_thread_state.compare_exchange_strong(state, kNotStarted,
                                                      std::memory_order_relaxed))
      return;
    state = kNotStarted;
  }
  if (state == kNotStarted &&
      g_decay_thread_state.compare_exchange_strong(state, kStarting, std::memory_order_relaxed))
    start();
}

// Leaves errno as it was: the system calls it makes (stat, tgkill, clone) may set it.
void start_if_needed() {
  const int saved_errno = errno;
  start_unless_running();
  errno = saved_errno;
}

}  // namespace

void on_malloc_slow_path() {
  int state = g_decay_thread_state.load(std::memory_order_relaxed);
  // After a failed creation, the back-off over: try again.
  if (state == kFailed && os_clock_ms() >= g_retry_at_ms.load(std::memory_order_relaxed) &&
      g_decay_thread_state.compare_exchange_strong(state, kNotStarted, std::memory_order_relaxed))
    state = kNotStarted;
  if (state == kNotStarted || state == kExited) [[unlikely]]
    start_if_needed();
  else
    note_decay_work();
}

void note_startup_cpus() {
  g_startup_cpus_known = sched_getaffinity(0, sizeof g_startup_cpus, &g_startup_cpus) == 0;
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
