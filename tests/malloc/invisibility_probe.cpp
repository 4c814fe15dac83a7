// Runs an allocation peak past the one that starts poolalloc's decay thread (48 MiB of 1 KiB
// blocks, freed), then prints on stdout what the program can see of itself (self_view.hpp), and
// nothing on stderr. invisibility_test runs it on glibc and with libpoolalloc.so preloaded, and
// compares. The mode says what the program does around the peak:
//
//   single      main thread only; prints two decay periods (2.5 s) after the free
//   multi       four threads of its own share the peak and are joined; prints once only the main
//               thread is left, or a decay period (1.5 s) after the join
//   multi-live  the same, but prints while the four threads still run
//   fifo        main thread pinned to the first allowed CPU and at SCHED_FIFO ("realtime
//               <errno name>" where it may not be), one thread of its own running, the peak
//               on the main thread
//   fork        the main thread alone holds the peak and forks; the child makes a peak of its
//               own and prints its thread count ("child-threads", "child-tasks")
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "self_view.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBlockBytes = 1024;
constexpr size_t kPeakBlocks = (size_t{48} << 20) / kBlockBytes;
constexpr size_t kProgramThreads = 4;
// Two decay periods at the default POOLALLOC_DECAY_MS, and some time for the thread to notice.
constexpr auto kTwoPeriods = std::chrono::milliseconds(2500);
// One period, and half of one for a loaded machine to run the thread that notices.
constexpr auto kOnePeriodAndSlack = std::chrono::milliseconds(1500);
// How long a helper thread may take to settle (name itself, say) before the probe looks at it.
constexpr auto kSettle = std::chrono::milliseconds(1000);
constexpr auto kPollInterval = std::chrono::milliseconds(20);

// The pointers live outside the pools, as static arrays: a peak's blocks and a fork child's.
void* g_peak[kPeakBlocks];
void* g_child_peak[kPeakBlocks];

cpu_set_t g_allowed;  // the process's cpuset, as it started

bool take(void** blocks, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    blocks[i] = malloc(kBlockBytes);
    if (blocks[i] == nullptr) return false;
    memset(blocks[i], static_cast<int>(i), 16);
  }
  return true;
}

void give_back(void** blocks, size_t count) {
  for (size_t i = 0; i < count; ++i) free(blocks[i]);
}

void print(const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t written = write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (written <= 0) _exit(3);
    done += static_cast<size_t>(written);
  }
}

void pause_for(std::chrono::milliseconds time) {
  std::this_thread::sleep_for(time);
}

template <class Condition>
void poll_until(Condition condition, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!condition() && Clock::now() < deadline) pause_for(kPollInterval);
}

std::string threads_not_ours_settled(const std::vector<pid_t>& own) {
  // Until every thread not ours reads as a helper a program cannot tell from none, or kSettle.
  std::string view;
  poll_until(
      [&] {
        view = self_view::threads_not_ours(own, g_allowed);
        for (size_t line = view.find('\n') + 1; line < view.size();
             line = view.find('\n', line) + 1) {
          if (view.compare(line, view.find('\n', line) - line, self_view::kInvisibleHelper) != 0)
            return false;
        }
        return true;
      },
      kSettle);
  return view;
}

// The process after a peak: thread count, everything else, unshare last.
std::string whole_view() {
  std::string view = self_view::thread_count();
  view += self_view::process(g_allowed);
  return view + self_view::unshare_user_namespace();
}

// The threads that are not the program's, then the rest.
std::string view_beside(const std::vector<pid_t>& own) {
  const std::string view = threads_not_ours_settled(own);
  return view + self_view::process(g_allowed);
}

// The program's threads share the peak, each taking and giving back its part at the same time,
// then running `after_free`; the main thread runs `meanwhile`, then joins them. `own` gets their
// thread ids before `meanwhile` runs.
template <class AfterFree, class Meanwhile>
bool program_threads_share_a_peak(std::vector<pid_t>& own, AfterFree after_free,
                                  Meanwhile meanwhile) {
  std::barrier at_peak(kProgramThreads);
  std::latch started(kProgramThreads);
  std::atomic<bool> ok{true};
  const size_t first = own.size();
  own.resize(first + kProgramThreads);
  constexpr size_t kShare = kPeakBlocks / kProgramThreads;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kProgramThreads; ++i) {
    threads.emplace_back([&, i] {
      own[first + i] = gettid();
      started.count_down();
      void** blocks = g_peak + i * kShare;
      if (!take(blocks, kShare)) ok = false;
      at_peak.arrive_and_wait();
      give_back(blocks, kShare);
      after_free();
    });
  }
  started.wait();
  meanwhile();
  for (std::thread& thread : threads) thread.join();
  return ok;
}

int single() {
  if (!take(g_peak, kPeakBlocks)) return 2;
  give_back(g_peak, kPeakBlocks);
  pause_for(kTwoPeriods);
  print(whole_view());
  return 0;
}

int multi() {
  std::vector<pid_t> own{getpid()};
  if (!program_threads_share_a_peak(
          own, [] {}, [] {}))
    return 2;
  poll_until([] { return self_view::thread_count() == "threads 1\ntasks 1\n"; },
             kOnePeriodAndSlack);
  print(whole_view());
  return 0;
}

int multi_live() {
  std::vector<pid_t> own{getpid()};
  std::latch freed(kProgramThreads + 1), looked(1);
  std::string view;
  const bool ok = program_threads_share_a_peak(
      own,
      [&] {
        freed.count_down();
        looked.wait();
      },
      [&] {
        freed.arrive_and_wait();
        view = view_beside(own);
        looked.count_down();
      });
  if (!ok) return 2;
  print(view);
  return 0;
}

int fifo() {
  cpu_set_t first;
  CPU_ZERO(&first);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &g_allowed)) continue;
    CPU_SET(cpu, &first);
    break;
  }
  if (sched_setaffinity(0, sizeof first, &first) != 0) return 2;
  const sched_param param{.sched_priority = 1};
  const int error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
  if (error != 0) print(std::string("realtime ") + strerrorname_np(error) + "\n");
  std::vector<pid_t> own{getpid(), 0};
  std::latch started(1), looked(1);
  std::thread thread([&] {
    own[1] = gettid();
    void* volatile block = malloc(64);  // a program's thread allocates: it has a cache
    free(block);
    started.count_down();
    looked.wait();
  });
  started.wait();
  const bool ok = take(g_peak, kPeakBlocks);
  if (ok) give_back(g_peak, kPeakBlocks);
  const std::string view = view_beside(own);
  looked.count_down();
  thread.join();
  if (!ok) return 2;
  print(view);
  return 0;
}

int fork_at_peak() {
  if (!take(g_peak, kPeakBlocks)) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    if (!take(g_child_peak, kPeakBlocks)) _exit(2);
    give_back(g_child_peak, kPeakBlocks);
    print(self_view::thread_count("child-"));
    _exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 2;
  give_back(g_peak, kPeakBlocks);
  print(whole_view());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sched_getaffinity(0, sizeof g_allowed, &g_allowed);
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode == "single") return single();
  if (mode == "multi") return multi();
  if (mode == "multi-live") return multi_live();
  if (mode == "fifo") return fifo();
  if (mode == "fork") return fork_at_peak();
  return 1;
}
