// Runs a fork scenario in a process of its own, under a watchdog, so that a deadlock fails the
// test with a clear message instead of blocking ctest. The scenario process leads a process
// group of its own: when the watchdog fires, the whole group is killed, the scenario's children
// stuck in a fork handler included.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include <gtest/gtest.h>

namespace malloc_test {

// The exit status of a scenario whose watchdog fired (it is killed by SIGALRM).
inline ::testing::AssertionResult ScenarioSucceeded(int status, unsigned watchdog_seconds) {
  if (WIFSIGNALED(status)) {
    if (WTERMSIG(status) == SIGALRM) {
      return ::testing::AssertionFailure() << "deadlock: the scenario did not finish within "
                                           << watchdog_seconds << " s (its watchdog fired)";
    }
    return ::testing::AssertionFailure()
           << "the scenario was killed by signal " << WTERMSIG(status);
  }
  if (WEXITSTATUS(status) != 0)
    return ::testing::AssertionFailure() << "the scenario exited with " << WEXITSTATUS(status);
  return ::testing::AssertionSuccess();
}

// Runs `scenario` (returns an exit code, 0 for success) in a forked process whose alarm()
// fires after `watchdog_seconds`. Call it from a single-threaded test process.
template <class Scenario>
::testing::AssertionResult RunUnderWatchdog(unsigned watchdog_seconds, Scenario scenario) {
  const pid_t pid = fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork failed";
  if (pid == 0) {
    setpgid(0, 0);
    alarm(watchdog_seconds);  // default action: terminate with SIGALRM
    _exit(scenario());
  }
  setpgid(pid, pid);  // either call may come first
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  kill(-pid, SIGKILL);  // children the scenario left behind, stuck or not
  return ScenarioSucceeded(status, watchdog_seconds);
}

inline double seconds_since(const timespec& start) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - start.tv_sec) +
         static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
}

// Forks `forks` times (or until `seconds` have passed): each child runs `in_child` (which must
// not return), the parent waits for it. Returns how many children exited with 0, or -1 on the
// first child that did not.
template <class InChild>
long fork_loop(long forks, double seconds, InChild in_child) {
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  long done = 0;
  for (; done < forks && seconds_since(start) < seconds; ++done) {
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) in_child();
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  }
  return done;
}

}  // namespace malloc_test
