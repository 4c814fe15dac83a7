// Memory tags while another thread forks. From the allocator's prepare handler to its parent or
// child handler its locks are held for fork() and no thread waits for them: malloc and free fall
// back (the system allocator, orphan lists, deferred records). The tags' figures must stay exact
// through that, and poolalloc_tag_register and a thread's first poolalloc_tag_push must wait for
// the fork rather than fail. The window is entered deterministically: the prepare handler of a
// library initialised before the allocator (fork_handler_library.cpp) runs after the allocator's,
// with its locks held, and there hands work to another thread. Each scenario runs in a process of
// its own under a watchdog (fork_scenario.hpp).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include <gtest/gtest.h>

#include "fork_handler_library.hpp"
#include "fork_scenario.hpp"
#include "poolalloc/poolalloc.h"

namespace malloc_test {
namespace {

constexpr unsigned kWatchdogSeconds = 30;

// Work that a helper thread does while the fork window is open, handed to it by the prepare
// handler, which waits until it is done or blocked in a futex wait (read from
// /proc/self/task/<tid>/syscall; nothing here allocates, as the handler runs inside fork()).
struct ForkWindowWork {
  void (*before)() = nullptr;  // what the helper does first, before the fork
  void (*work)() = nullptr;
  std::atomic<int> tid{0};
  std::atomic<int> go{0};
  std::atomic<int> done{0};
};
ForkWindowWork g_window;

// Whether thread `tid` of this process is in a futex wait.
bool in_futex_wait(int tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[32] = {};
  const ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  return got > 0 && strtol(text, nullptr, 10) == SYS_futex;
}

void* helper_thread(void*) {
  if (g_window.before != nullptr) g_window.before();
  g_window.tid.store(static_cast<int>(gettid()));
  while (g_window.go.load() == 0) {  // spins: the thread makes no call before its work
  }
  g_window.work();
  g_window.done.store(1);
  return nullptr;
}

// The library's prepare handler: runs the work in the helper and waits until it is done, or (if
// `may_block`) blocked.
bool g_work_may_block = false;
void hand_work_to_helper() {
  g_window.go.store(1);
  while (g_window.done.load() == 0 && !(g_work_may_block && in_futex_wait(g_window.tid.load()))) {
  }
}

// Forks once, the helper doing `before` and then `work` in the fork window; returns 0, or -1 when
// the fork or the child failed. Afterwards the helper is joined: its work is over.
int fork_with_work_in_the_window(void (*before)(), void (*work)(), bool may_block) {
  g_window.before = before;
  g_window.work = work;
  g_work_may_block = may_block;
  pthread_t helper;
  if (pthread_create(&helper, nullptr, helper_thread, nullptr) != 0) return -1;
  while (g_window.tid.load() == 0) {
  }
  fork_handlers_call(hand_work_to_helper, nullptr, nullptr);
  const long forks = fork_loop(1, 60, [] { _exit(0); });
  fork_handlers_call(nullptr, nullptr, nullptr);
  pthread_join(helper, nullptr);
  return forks == 1 ? 0 : -1;
}

poolalloc_tag_stats stats_of(int id) {
  poolalloc_tag_stats stats{};
  poolalloc_get_tag_stats(id, &stats);
  return stats;
}

// Blocks of a tag, allocated before the fork and handled by the helper in the window.
int g_tag = 0;
constexpr int kPooled = 2000;  // freed in the window: more than a thread cache's bin holds
void* g_pooled[kPooled];
constexpr int kKept = 100;
void* g_kept[kKept];
void* g_large_freed = nullptr;
void* g_large_resized = nullptr;
void* g_resized = nullptr;
void* g_small_kept = nullptr;
bool g_window_fell_back = false;

void tagged_work_before_the_fork() {
  poolalloc_tag_push(g_tag);
  g_large_freed = malloc(200000);
  g_large_resized = malloc(300000);
  for (void*& p : g_pooled) p = malloc(48);
  for (void*& p : g_kept) p = malloc(64);
  poolalloc_tag_pop();
}

void tagged_work_in_the_window() {
  free(g_large_freed);  // its record is removed while the table is held for fork
  poolalloc_tag_push(g_tag);
  // The thread never used these classes under the tag: their bins are empty and cannot be
  // refilled, so glibc serves them, and their records wait for the fork's end.
  g_small_kept = malloc(1000);
  void* small_freed = malloc(2000);
  g_window_fell_back = poolalloc_owns(g_small_kept) == 0 && poolalloc_owns(small_freed) == 0;
  free(small_freed);
  poolalloc_tag_pop();
  for (void* p : g_pooled) free(p);  // the bins overflow into their classes' orphan lists
  g_resized = realloc(g_large_resized, 250000);  // untagged: a block kept in place keeps its tag
}

int tag_figures_scenario() {
  g_tag = poolalloc_tag_register("ForkFigures");
  if (g_tag <= 0) return 10;
  if (fork_with_work_in_the_window(tagged_work_before_the_fork, tagged_work_in_the_window, false) !=
      0)
    return 11;
  if (!g_window_fell_back) return 12;  // the work did not run inside the window
  const bool kept_in_place = g_resized == g_large_resized;
  const poolalloc_tag_stats during = stats_of(g_tag);
  const std::uint64_t blocks = kKept + 1 + (kept_in_place ? 1 : 0);
  const std::uint64_t bytes = kKept * 64 + 1000 + (kept_in_place ? 250000 : 0);
  for (void* p : g_kept) free(p);
  free(g_small_kept);
  free(g_resized);
  const poolalloc_tag_stats after = stats_of(g_tag);
  if (during.live_blocks != blocks || during.live_bytes != bytes) {
    fprintf(stderr, "after the fork: %llu blocks, %llu bytes; want %llu, %llu\n",
            static_cast<unsigned long long>(during.live_blocks),
            static_cast<unsigned long long>(during.live_bytes),
            static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(bytes));
    return 13;
  }
  if (after.live_blocks != 0 || after.live_bytes != 0) {
    fprintf(stderr, "all freed: %llu blocks, %llu bytes\n",
            static_cast<unsigned long long>(after.live_blocks),
            static_cast<unsigned long long>(after.live_bytes));
    return 14;
  }
  return 0;
}

TEST(MemoryTagsFork, ATagsFiguresStayExactWhenAnotherThreadAllocatesAndFreesDuringFork) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, tag_figures_scenario));
}

int g_registered = 0;
int g_register_errno = 0;
void register_in_the_window() {
  errno = 0;
  g_registered = poolalloc_tag_register("RegisteredDuringFork");
  g_register_errno = errno;
}

int register_scenario() {
  if (fork_with_work_in_the_window(nullptr, register_in_the_window, true) != 0) return 20;
  if (g_registered <= 0) {
    fprintf(stderr, "register: %d, errno %d\n", g_registered, g_register_errno);
    return 21;
  }
  return poolalloc_tag_register("RegisteredDuringFork") == g_registered ? 0 : 22;
}

TEST(MemoryTagsFork, RegisteringFromAnotherThreadDuringForkWaitsForTheForkAndSucceeds) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, register_scenario));
}

int g_pushed = -1;
int g_push_errno = 0;
int g_push_tag = 0;
void first_push_in_the_window() {  // the helper's first call into the allocator
  errno = 0;
  g_pushed = poolalloc_tag_push(g_push_tag);
  g_push_errno = errno;
  if (g_pushed == 0) poolalloc_tag_pop();
}

int first_push_scenario() {
  g_push_tag = poolalloc_tag_register("FirstPushDuringFork");
  if (g_push_tag <= 0) return 30;
  if (fork_with_work_in_the_window(nullptr, first_push_in_the_window, true) != 0) return 31;
  if (g_pushed != 0) {
    fprintf(stderr, "push: %d, errno %d\n", g_pushed, g_push_errno);
    return 32;
  }
  return 0;
}

TEST(MemoryTagsFork, AThreadsFirstPushDuringForkWaitsForTheForkAndSucceeds) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, first_push_scenario));
}

// The forking thread itself, in a fork handler that runs while the allocator's locks are held
// for fork (the library's prepare handler, after the allocator's, and its parent and child
// handlers, before the allocator's), cannot wait for itself: EAGAIN, as documented. Once fork()
// returned, the same registration succeeds.
std::atomic<int> g_handler_results[3];
std::atomic<int> g_handler_errnos[3];
void register_in_handler(int which) {
  errno = 0;
  g_handler_results[which] = poolalloc_tag_register("RegisteredInAForkHandler");
  g_handler_errnos[which] = errno;
}

int handler_register_scenario() {
  std::atomic<bool> stop{false};
  pthread_t busy;  // the allocator locks for fork only in a multithreaded process
  if (pthread_create(
          &busy, nullptr,
          [](void* stop) -> void* {
            while (!static_cast<std::atomic<bool>*>(stop)->load()) {
            }
            return nullptr;
          },
          &stop) != 0)
    return 40;
  fork_handlers_call([] { register_in_handler(0); }, [] { register_in_handler(1); },
                     [] {
                       register_in_handler(2);
                       _exit(g_handler_results[2] == -1 && g_handler_errnos[2] == EAGAIN ? 0 : 1);
                     });
  const long forks = fork_loop(1, 60, [] { _exit(2); });
  fork_handlers_call(nullptr, nullptr, nullptr);
  stop = true;
  pthread_join(busy, nullptr);
  if (forks != 1) return 41;  // the child's handler did not see EAGAIN
  for (int which : {0, 1})
    if (g_handler_results[which] != -1 || g_handler_errnos[which] != EAGAIN) return 42 + which;
  return poolalloc_tag_register("RegisteredInAForkHandler") > 0 ? 0 : 44;
}

TEST(MemoryTagsFork, RegisteringFromAForkHandlerInsideTheForkFailsWithEagain) {
  EXPECT_TRUE(RunUnderWatchdog(kWatchdogSeconds, handler_register_scenario));
}

}  // namespace
}  // namespace malloc_test
