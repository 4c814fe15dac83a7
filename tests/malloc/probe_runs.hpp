// Runs a program several times at once, each with its own arguments and with or without a
// library in LD_PRELOAD, and collects what each wrote on stdout and stderr. Every run gets the
// environment of the test without LD_PRELOAD and the POOLALLOC_* variables (the library at its
// default options); a preloaded run has LD_PRELOAD=<library> added last.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace malloc_test {

struct ProbeRun {
  std::vector<std::string> arguments;  // the program first
  std::string preload;                 // the library preloaded, or empty for none
  int status = -1;                     // the exit status, or 128 + the signal
  std::string out, err;
  bool on_one_cpu = false;  // started on the first CPU it may use, as `taskset -c N` would
};

namespace detail {

inline std::vector<std::string> environment_for(const std::string& preload) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("POOLALLOC_", 0) == 0 || text.rfind("LD_PRELOAD=", 0) == 0) continue;
    environment.push_back(text);
  }
  if (!preload.empty()) environment.push_back("LD_PRELOAD=" + preload);
  return environment;
}

inline std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

}  // namespace detail

// Starts every run, then reads their output until all have exited; a run still going after
// `limit` is killed (status 128 + SIGKILL).
inline void run_all(std::vector<ProbeRun>& runs,
                    std::chrono::seconds limit = std::chrono::seconds(30)) {
  struct Started {
    pid_t pid = -1;
    int out = -1, err = -1;
  };
  std::vector<Started> started(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::string> environment = detail::environment_for(runs[i].preload);
    std::vector<std::string> arguments = runs[i].arguments;
    const std::vector<char*> envp = detail::pointers(environment);
    const std::vector<char*> argv = detail::pointers(arguments);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) continue;
    const pid_t pid = fork();
    if (pid == 0) {
      if (runs[i].on_one_cpu) {
        cpu_set_t allowed, first;
        CPU_ZERO(&first);
        sched_getaffinity(0, sizeof allowed, &allowed);
        for (int cpu = 0; cpu < CPU_SETSIZE && CPU_COUNT(&first) == 0; ++cpu)
          if (CPU_ISSET(cpu, &allowed)) CPU_SET(cpu, &first);
        sched_setaffinity(0, sizeof first, &first);
      }
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
      close(out[0]);
      close(err[0]);
      continue;
    }
    started[i] = {pid, out[0], err[0]};
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::vector<pollfd> open;
    std::vector<std::string*> into;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (started[i].out >= 0)
        open.push_back({started[i].out, POLLIN, 0}), into.push_back(&runs[i].out);
      if (started[i].err >= 0)
        open.push_back({started[i].err, POLLIN, 0}), into.push_back(&runs[i].err);
    }
    if (open.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || poll(open.data(), open.size(), static_cast<int>(left.count())) <= 0) {
      for (const Started& run : started) {
        if (run.pid > 0) kill(run.pid, SIGKILL);
      }
      break;
    }
    for (size_t j = 0; j < open.size(); ++j) {
      if (open[j].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = read(open[j].fd, buffer, sizeof buffer);
      if (got > 0) {
        into[j]->append(buffer, static_cast<size_t>(got));
        continue;
      }
      close(open[j].fd);
      for (Started& run : started) {
        if (run.out == open[j].fd) run.out = -1;
        if (run.err == open[j].fd) run.err = -1;
      }
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (started[i].out >= 0) close(started[i].out);
    if (started[i].err >= 0) close(started[i].err);
    if (started[i].pid < 0) continue;
    int status = 0;
    while (waitpid(started[i].pid, &status, 0) < 0) {
    }
    runs[i].status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
}

}  // namespace malloc_test
