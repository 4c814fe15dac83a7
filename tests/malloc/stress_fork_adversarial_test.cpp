// fork() in the situations written to break the fork protocol: forks from several threads at
// once while others allocate, trim and exit (their caches flushed at exit while locks are held
// for fork); a child that allocates heavily and then execs; posix_spawn (vfork-like, no fork
// handlers) while others allocate; fork from a signal handler in a multithreaded process while
// other threads allocate. Each scenario runs under a watchdog (fork_scenario.hpp).
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fork_scenario.hpp"

extern char** environ;

namespace malloc_test {
namespace {

constexpr unsigned kWatchdogSeconds = 30;

// Allocates and frees blocks of every kind of size until told to stop.
void churn(const std::atomic<bool>& stop, unsigned seed) {
  void* slots[64] = {};
  for (unsigned i = seed; !stop.load(std::memory_order_relaxed); ++i) {
    void*& slot = slots[(i * 7) % 64];
    free(slot);
    slot = malloc(i % 16 == 0 ? 40000 : 16 + (i * 131) % 30000);
  }
  for (void* p : slots) free(p);
}

[[noreturn]] void child_allocates_and_exits() {
  void* blocks[256];
  for (int i = 0; i < 256; ++i) {
    blocks[i] = malloc(16 + static_cast<size_t>(i) * 120);
    if (blocks[i] == nullptr) _exit(30);
  }
  for (void* p : blocks) free(p);
  _exit(0);
}

int storm_scenario() {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.emplace_back(churn, std::cref(stop), 1u);
  threads.emplace_back([&] {  // malloc_trim concurrent with the forks
    while (!stop.load(std::memory_order_relaxed)) malloc_trim(0);
  });
  threads.emplace_back([&] {  // threads that allocate a little and exit: exit flushes
    while (!stop.load(std::memory_order_relaxed)) {
      std::thread([] {
        void* blocks[40];
        for (int i = 0; i < 40; ++i) blocks[i] = malloc(64 + static_cast<size_t>(i) * 200);
        for (int i = 0; i < 40; i += 2) free(blocks[i]);  // some freed at once, the rest at exit
        for (int i = 1; i < 40; i += 2) free(blocks[i]);
      }).join();
    }
  });
  std::atomic<int> failures{0};
  std::vector<std::thread> forkers;
  for (int f = 0; f < 3; ++f) {
    forkers.emplace_back([&] {
      if (fork_loop(300, 8, child_allocates_and_exits) < 0) failures.fetch_add(1);
    });
  }
  for (std::thread& t : forkers) t.join();
  stop = true;
  for (std::thread& t : threads) t.join();
  return failures.load() == 0 ? 0 : 31;
}

TEST(ForkAdversarial, StormsFromSeveralThreadsWhileOthersAllocateTrimAndExit) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, storm_scenario));
}

int exec_scenario() {
  std::atomic<bool> stop{false};
  std::thread busy(churn, std::cref(stop), 2u);
  const long forks = fork_loop(100, 8, [] {
    std::vector<void*> blocks;  // heavily: thousands of blocks, then exec
    for (int i = 0; i < 5000; ++i) blocks.push_back(malloc(16 + static_cast<size_t>(i % 500) * 64));
    for (void* p : blocks) free(p);
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    _exit(32);
  });
  stop = true;
  busy.join();
  return forks > 0 ? 0 : 33;
}

TEST(ForkAdversarial, ChildAllocatesHeavilyThenExecs) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, exec_scenario));
}

int spawn_scenario() {
  std::atomic<bool> stop{false};
  std::thread busy(churn, std::cref(stop), 3u);
  int result = 0;
  for (int i = 0; i < 100 && result == 0; ++i) {
    pid_t pid = 0;
    char name[] = "true";
    char* argv[] = {name, nullptr};
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) {
      result = 34;
      break;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) result = 35;
  }
  stop = true;
  busy.join();
  return result;
}

TEST(ForkAdversarial, PosixSpawnWhileOthersAllocate) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, spawn_scenario));
}

// A signal handler forks on a thread that does not allocate, while other threads allocate.
std::atomic<int> g_handler_forks{0};
std::atomic<int> g_handler_bad_children{0};

void fork_in_handler(int) {
  const int saved_errno = errno;
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) g_handler_bad_children.fetch_add(1);
  }
  g_handler_forks.fetch_add(1);
  errno = saved_errno;
}

int signal_scenario() {
  struct sigaction action {};
  action.sa_handler = fork_in_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
  std::atomic<bool> stop{false};
  std::thread a(churn, std::cref(stop), 4u);
  std::thread b(churn, std::cref(stop), 5u);
  // 150 forks: under the debug heap on a loaded 2-core machine they take about 10 s of the 30 s
  // the watchdog allows (each fork copies the page tables of the churning threads' heap).
  for (int i = 0; i < 150; ++i) {
    const int before = g_handler_forks.load();
    raise(SIGUSR1);  // delivered to this thread, which holds no lock, before raise returns
    if (g_handler_forks.load() != before + 1) return 36;
  }
  stop = true;
  a.join();
  b.join();
  return g_handler_bad_children.load() == 0 ? 0 : 37;
}

TEST(ForkAdversarial, FromASignalHandlerWhileOtherThreadsAllocate) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, signal_scenario));
}

}  // namespace
}  // namespace malloc_test
