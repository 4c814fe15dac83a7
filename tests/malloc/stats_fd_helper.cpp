// A program for options_test, run with libpoolalloc.so preloaded and POOLALLOC_STATS=1 or
// POOLALLOC_STATS_FILE. It does to its descriptors what the mode says, then exits:
//   daemon DATA      closes fds 3..1023 (the copy of stderr the library took among them), then
//                    opens DATA on the lowest numbers (so whichever one the copy had is reused)
//                    and writes "payload\n" to it
//   daemon-all DATA  the same, but closes fds 0..1023 first (stderr included)
//   close-stderr     closes fd 2 before it exits, as coreutils and xz do
//   slow-exit        waits a moment (the reader of its stderr pipe goes away meanwhile)
//   first-open DATA  opens DATA and exits with 0 when it got fd 3 (the lowest number above
//                    stdio, which the library's copy of stderr must leave free), else 4
//   fork N DATA      forks N children that exit at once, together, with exit() (so that each
//                    writes its table), and writes their process ids to DATA, one a line
//   chdir            changes to / before it exits
//   exit-cancelled   exits from a thread that has a cancellation pending: the library's
//                    destructors, the table among them, run in that thread
//   dlopen-cancelled LIBRARY
//                    loads LIBRARY (run with nothing preloaded) from a thread that has a
//                    cancellation pending, so that the library's reports at start-up are written
//                    by that thread, then loads it again from the main thread; 0 when the thread
//                    was cancelled after the load, not in it (a watchdog ends a hang)
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

int reopen_data(const char* path, int first_fd) {
  int data = -1;
  for (int fd = first_fd; fd <= 10; ++fd) {
    const int opened = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (opened < 0) return 2;
    if (data < 0) data = opened;
  }
  const char payload[] = "payload\n";
  return write(data, payload, sizeof payload - 1) == sizeof payload - 1 ? 0 : 3;
}

// The children wait until all are forked, then exit at once: their tables are written at the
// same time. DATA is written once they are all forked: a child's exit() flushes no copy of it.
int fork_children(int count, const char* path) {
  static pid_t children[1000];
  int start[2];
  if (count < 0 || count > 1000 || pipe(start) != 0) return 2;
  for (int i = 0; i < count; ++i) {
    children[i] = fork();
    if (children[i] < 0) return 2;
    if (children[i] == 0) {
      close(start[1]);
      char byte;
      while (read(start[0], &byte, 1) > 0) {
      }
      void* volatile block = malloc(200);
      free(block);
      exit(0);
    }
  }
  close(start[1]);  // every child's read returns now
  int failures = 0;
  for (int status = 0; wait(&status) > 0;) {
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  FILE* data = fopen(path, "w");
  if (data == nullptr) return 2;
  for (int i = 0; i < count; ++i) fprintf(data, "%d\n", static_cast<int>(children[i]));
  fclose(data);
  return failures == 0 ? 0 : 5;
}

void* exit_cancelled(void*) {
  pthread_cancel(pthread_self());
  exit(0);
}

void* g_loaded = nullptr;
void* load_cancelled(void* path) {
  pthread_cancel(pthread_self());
  g_loaded = dlopen(static_cast<const char*>(path), RTLD_NOW | RTLD_LOCAL);
  pthread_testcancel();
  return nullptr;
}

// Runs body(arg) in a thread and joins it: its result, or nullptr if it could not run.
void* in_thread(void* (*body)(void*), void* arg) {
  pthread_t thread;
  void* result = nullptr;
  if (pthread_create(&thread, nullptr, body, arg) != 0) return nullptr;
  pthread_join(thread, &result);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 1;
  void* volatile block = malloc(100);  // something for the table to count
  free(block);
  if (strcmp(argv[1], "daemon") == 0 && argc == 3) {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    return reopen_data(argv[2], 3);
  }
  if (strcmp(argv[1], "daemon-all") == 0 && argc == 3) {
    for (int fd = 0; fd < 1024; ++fd) close(fd);
    return reopen_data(argv[2], 0);
  }
  if (strcmp(argv[1], "close-stderr") == 0) {
    close(STDERR_FILENO);
    return 0;
  }
  if (strcmp(argv[1], "first-open") == 0 && argc == 3) {
    const int fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0600);
    return fd == 3 ? 0 : 4;
  }
  if (strcmp(argv[1], "fork") == 0 && argc == 4) return fork_children(atoi(argv[2]), argv[3]);
  if (strcmp(argv[1], "chdir") == 0) return chdir("/") == 0 ? 0 : 2;
  if (strcmp(argv[1], "exit-cancelled") == 0) {
    alarm(10);  // a thread cancelled inside exit() would leave the process waiting here
    in_thread(exit_cancelled, nullptr);
    return 3;
  }
  if (strcmp(argv[1], "dlopen-cancelled") == 0 && argc == 3) {
    alarm(10);  // a loader lock left held by the cancelled thread: the second dlopen waits
    if (in_thread(load_cancelled, argv[2]) != PTHREAD_CANCELED || g_loaded == nullptr) return 4;
    return dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) == g_loaded ? 0 : 5;
  }
  if (strcmp(argv[1], "slow-exit") == 0) {
    usleep(200 * 1000);
    return 0;
  }
  return 1;
}
