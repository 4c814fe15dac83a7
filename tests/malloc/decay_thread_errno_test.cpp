// A malloc that succeeds leaves errno as it was (malloc.md, "What a program can see"), the one
// that starts the decay thread included: in a program that runs threads of its own, the thread
// leaves once the program's threads are joined, and the first malloc of the next thread that
// allocates starts it again after asking the kernel whether the one that left is gone.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <gtest/gtest.h>

#include "malloc_test_util.hpp"
#include "rss_workloads.hpp"

namespace malloc_test {
namespace {

// Waits up to 5 s for the decay thread to leave; true once it has.
bool decay_thread_left() {
  for (int i = 0; i < 1000 && decay_thread_exists(); ++i) {
    const timespec pause{0, 5000000};
    nanosleep(&pause, nullptr);
  }
  return !decay_thread_exists();
}

// A thread's first mallocs, of a few sizes, with errno set to 0 before them: the first errno
// one of them left, or 0.
void* errno_after_first_mallocs(void* result) {
  void* blocks[64] = {};
  errno = 0;
  int seen = 0;
  for (size_t i = 0; i < 64; ++i) {
    blocks[i] = malloc(opaque(size_t{64} + 16 * (i % 8)));
    if (seen == 0) seen = errno;
  }
  for (void* block : blocks) free(block);
  *static_cast<int*>(result) = seen;
  return nullptr;
}

TEST(ErrnoAfterASuccessfulMalloc, IsLeftAloneByTheMallocThatStartsTheDecayThreadAgain) {
  void* volatile own = malloc(opaque(size_t{64}));  // the main thread has a cache
  {
    const ThreadOfItsOwn companion;
    ASSERT_TRUE(decay_thread_started());
  }
  ASSERT_TRUE(decay_thread_left()) << "the decay thread stayed after the join";
  int seen = -1;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, errno_after_first_mallocs, &seen), 0);
  pthread_join(thread, nullptr);
  EXPECT_EQ(seen, 0) << "errno after mallocs that succeeded: " << seen;
  free(own);
}

}  // namespace
}  // namespace malloc_test
