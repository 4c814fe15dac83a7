// fork while other threads allocate (glibc tst-malloc-fork-deadlock), from the main thread and
// from a worker, then allocate in the child; and fork from a signal handler that interrupts
// malloc in a single-threaded process (glibc tst-mallocfork2). A child that deadlocks is
// killed by its alarm() watchdog, so a deadlock fails the test instead of hanging it.
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "test_seed.hpp"

namespace malloc_test {
namespace {

constexpr unsigned kChildWatchdogSeconds = 5;

// What a child does after fork: allocate from every kind of path (thread cache, refill from
// the shared lists, the system allocator, libc internals, a new thread), then _exit(0).
[[noreturn]] void child_allocates_and_exits() {
  alarm(kChildWatchdogSeconds);
  std::vector<void*> blocks;
  blocks.reserve(4096);
  for (size_t i = 0; i < 4096; ++i) {
    const size_t size = 16 + (i * 37) % 2048;
    void* p = malloc(size);
    if (p == nullptr) _exit(2);
    memset(p, 0x5C, size);
    blocks.push_back(p);
  }
  for (void* p : blocks) free(p);
  for (size_t size : {32768u, 40000u, 1u << 20}) {
    void* p = calloc(1, size);
    if (p == nullptr || !all_bytes_are(p, size, 0)) _exit(3);
    free(p);
  }
  char* copy = strdup("child");
  delete new int(1);
  free(copy);
  std::thread([] { free(malloc(100)); }).join();
  _exit(0);
}

// Forks, lets the child allocate, and returns how the child ended (as waitpid reports it).
int fork_and_wait() {
  pid_t pid = fork();
  if (pid == 0) child_allocates_and_exits();
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

::testing::AssertionResult ExitedCleanly(int status) {
  if (status == -1) return ::testing::AssertionFailure() << "fork failed";
  if (WIFSIGNALED(status)) {
    return ::testing::AssertionFailure()
           << "child killed by signal " << WTERMSIG(status)
           << (WTERMSIG(status) == SIGALRM ? " (watchdog: deadlock after fork)" : "");
  }
  if (WEXITSTATUS(status) != 0) {
    return ::testing::AssertionFailure() << "child exited with " << WEXITSTATUS(status);
  }
  return ::testing::AssertionSuccess();
}

// Threads that allocate and free until told to stop.
class BusyAllocators {
 public:
  BusyAllocators(int count, uint64_t seed) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, i, seed] {
        std::mt19937_64 rng(seed + i);
        void* slots[64] = {};
        while (!stop_.load(std::memory_order_relaxed)) {
          void*& slot = slots[rng() % 64];
          free(slot);
          const uint64_t r = rng();
          slot = malloc(r % 16 == 0 ? 32769 + r % 100000 : 1 + r % 4096);
          iterations_.fetch_add(1, std::memory_order_relaxed);
        }
        for (void* p : slots) free(p);
      });
    }
  }
  ~BusyAllocators() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }
  uint64_t iterations() const { return iterations_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> iterations_{0};
  std::vector<std::thread> threads_;
};

TEST(Fork, FromMainThreadWhileOthersAllocate) {
  BusyAllocators busy(4, poolalloc_test::test_seed(0));
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(ExitedCleanly(fork_and_wait())) << "fork #" << i;
  EXPECT_GT(busy.iterations(), 0u);
}

TEST(Fork, FromAWorkerThreadWhileOthersAllocate) {
  BusyAllocators busy(4, poolalloc_test::test_seed(0));
  std::vector<int> statuses;
  std::thread forker([&statuses] {
    for (int i = 0; i < 60; ++i) {
      statuses.push_back(fork_and_wait());
      if (!ExitedCleanly(statuses.back())) break;  // one watchdog timeout is enough
    }
  });
  forker.join();
  for (size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_TRUE(ExitedCleanly(statuses[i])) << "fork #" << i;
  }
}

// tst-mallocfork2: in a single-threaded process, a signal handler forks while the main loop is
// inside malloc or free. The allocator must not take its locks for such a fork (glibc skips
// them when single-threaded), or the handler deadlocks against the interrupted call.
std::atomic<int> g_forks{0};
std::atomic<int> g_bad_children{0};

void fork_from_handler(int) {
  const int saved_errno = errno;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) g_bad_children.fetch_add(1);
    g_forks.fetch_add(1);
  }
  errno = saved_errno;
}

[[noreturn]] void allocate_while_handler_forks(uint64_t seed) {
  alarm(20);  // the watchdog: default action terminates with SIGALRM
  struct sigaction action {};
  action.sa_handler = fork_from_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &action, nullptr);
  // SIGPROF every 200 us of CPU time: it lands inside malloc and free often.
  itimerval timer{{0, 200}, {0, 200}};
  setitimer(ITIMER_PROF, &timer, nullptr);
  std::mt19937_64 rng(seed);
  void* slots[256] = {};
  while (g_forks.load() < 200) {
    void*& slot = slots[rng() % 256];
    free(slot);
    slot = malloc(1 + rng() % 3000);
  }
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  for (void* p : slots) free(p);
  _exit(g_bad_children.load() == 0 ? 0 : 4);
}

TEST(ForkDeathTest, FromASignalHandlerInterruptingMalloc) {
  // The threadsafe style re-executes the test binary, so the child is single-threaded.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const uint64_t seed = poolalloc_test::test_seed(1);
  EXPECT_EXIT(allocate_while_handler_forks(seed), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace malloc_test
