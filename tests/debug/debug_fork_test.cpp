// The debug heap's checks inside fork(): a library initialised before the allocator
// (fork_handler_library.cpp) runs handlers while the debug heap's lock is held for fork, in a
// process with a second thread (so that the handlers of fork() take their locks). What such a
// handler does must be checked as it would be at any other time.
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "fork_handler_library.hpp"
#include "malloc_test_util.hpp"

namespace {

using malloc_test::hide;

// Forks once with a second thread alive; the child exits at once.
void fork_with_a_second_thread() {
  std::promise<void> done;
  std::thread waiter([&] { done.get_future().wait(); });
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0) {
  }
  done.set_value();
  waiter.join();
}

void* g_block = nullptr;

void free_then_ask_the_size() {
  g_block = hide(malloc(40));
  free(g_block);
  static_cast<void>(malloc_usable_size(g_block));
}

// A block freed while the lock is held for fork is no longer live, though its free is only
// replayed after the fork: a use of it is reported at once, naming where it was freed.
TEST(DebugFork, UseAfterFreeInsideAForkHandlerIsReported) {
  EXPECT_DEATH(
      {
        fork_handlers_call(free_then_ask_the_size, nullptr, nullptr);
        fork_with_a_second_thread();
      },
      "use after free: malloc_usable_size of 0x[0-9a-f]+ \\(40 bytes .*; freed at");
}

void free_twice() {
  g_block = hide(malloc(40));
  free(g_block);
  free(g_block);
}

// Both frees wait in the log; the second is reported when the log is replayed.
TEST(DebugFork, DoubleFreeInsideAForkHandlerIsReported) {
  EXPECT_DEATH(
      {
        fork_handlers_call(free_twice, nullptr, nullptr);
        fork_with_a_second_thread();
        free(hide(malloc(16)));  // a free after the fork replays the log
      },
      "double free: free of 0x[0-9a-f]+ \\(40 bytes .*first freed at");
}

void allocate_in_prepare() {
  g_block = hide(malloc(40));
}
void free_in_child() {
  free(g_block);
}

// A block the prepare handler allocated and the parent still holds: the child frees its copy,
// and a second free in the child is a double free there.
TEST(DebugFork, DoubleFreeInTheChildOfABlockAllocatedInsideTheFork) {
  EXPECT_DEATH(
      {
        fork_handlers_call(allocate_in_prepare, nullptr, free_in_child);
        std::promise<void> done;
        std::thread waiter([&] { done.get_future().wait(); });
        const pid_t pid = fork();
        if (pid == 0) {
          free(g_block);  // the second free of it in this process
          _exit(0);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0) {
        }
        done.set_value();
        waiter.join();
        fork_handlers_call(nullptr, nullptr, nullptr);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) abort();
      },
      "double free: free of 0x[0-9a-f]+ \\(40 bytes .*first freed at");
}

}  // namespace
