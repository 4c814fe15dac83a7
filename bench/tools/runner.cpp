// bench-runner: runs one command and prints "WALL_MS MAXRSS_KB EXIT" on stdout.
//   bench-runner [--preload LIB] [--in FILE] [--out FILE] [--env NAME=VALUE]... [--exact-rss]
//                -- COMMAND...
// Wall time is clock_gettime(CLOCK_MONOTONIC) around fork/exec/wait, in milliseconds with three
// decimals. Peak RSS is getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest of the command and of
// every process it waited for (g++ waits for cc1plus and as). LD_PRELOAD is set for the
// command only (and unset without --preload), never for the runner. The command's stdin comes
// from the --in FILE, its stdout and stderr go to the --out FILE (both default /dev/null).
//
// --exact-rss: peak RSS read exactly instead. ru_maxrss reads a process's RSS counters without
// the parts that each CPU has not folded in yet, up to 128 KiB per CPU on the kernels that keep
// them per CPU (Linux 6.2 on), too coarse for differences of tens of KiB. The command then runs
// under ptrace, each of its processes and threads stopped at its exit (PTRACE_O_TRACEEXIT,
// following forks, vforks and clones) before the kernel takes its memory down, and VmHWM is read
// there from /proc/TID/status (at the exit it agrees with the sum of /proc/PID/smaps, where
// ru_maxrss fell short by up to 200 KiB); the figure is the largest over its processes, as
// ru_maxrss's is. The stops cost each thread's exit a round trip to the runner.
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

// VmHWM of thread `tid`, in KiB; 0 when it cannot be read.
long vm_hwm_kib(pid_t tid) {
  const std::string path = "/proc/" + std::to_string(tid) + "/status";
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return 0;
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof line, file) != nullptr)
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(file);
  return kib;
}

// --exact-rss: runs the traced command `pid` (stopped by its SIGSTOP before its exec) to its end;
// its wait status goes to `status`. Returns its peak RSS in KiB.
long trace_to_exit(pid_t pid, int& status) {
  waitpid(pid, &status, 0);
  const long options = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                       PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL;
  ptrace(PTRACE_SETOPTIONS, pid, nullptr, reinterpret_cast<void*>(options));
  ptrace(PTRACE_CONT, pid, nullptr, nullptr);
  long peak = 0;
  int stopped = 0;
  for (pid_t tid; (tid = waitpid(-1, &stopped, __WALL)) > 0;) {
    if (!WIFSTOPPED(stopped)) {
      if (tid == pid) status = stopped;
      continue;
    }
    long signal = WSTOPSIG(stopped);
    const int event = stopped >> 16;
    if (event == PTRACE_EVENT_EXIT) peak = std::max(peak, vm_hwm_kib(tid));
    // ptrace's own stops (its events; new processes and threads start stopped) are not the
    // command's signals, which go on to it.
    if (event != 0 || signal == SIGSTOP || signal == SIGTRAP) signal = 0;
    ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(signal));
  }
  return peak;
}

}  // namespace

int main(int argc, char** argv) {
  const char* preload = nullptr;
  const char* in = "/dev/null";
  const char* out = "/dev/null";
  std::vector<std::string> env;
  bool exact_rss = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--exact-rss") {
      exact_rss = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (arg == "--preload") {
      preload = argv[++i];
    } else if (arg == "--in") {
      in = argv[++i];
    } else if (arg == "--out") {
      out = argv[++i];
    } else if (arg == "--env") {
      env.emplace_back(argv[++i]);
    } else {
      break;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr,
                 "usage: %s [--preload LIB] [--in FILE] [--out FILE] [--env NAME=VALUE]... "
                 "[--exact-rss] -- COMMAND...\n",
                 argv[0]);
    return 2;
  }

  timespec start{}, end{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return 2;
  }
  if (pid == 0) {
    int input = open(in, O_RDONLY);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (input < 0 || fd < 0) _exit(126);
    dup2(input, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(input);
    close(fd);
    if (preload && *preload)
      setenv("LD_PRELOAD", preload, 1);
    else
      unsetenv("LD_PRELOAD");
    for (auto& e : env) putenv(e.data());
    if (exact_rss) {
      ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      raise(SIGSTOP);  // the runner sets its options before the exec
    }
    execvp(argv[i], argv + i);
    _exit(127);
  }
  int status = 0;
  const long exact_kib = exact_rss ? trace_to_exit(pid, status) : 0;
  if (!exact_rss && waitpid(pid, &status, 0) < 0) {
    std::perror("waitpid");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  double ms = static_cast<double>(end.tv_sec - start.tv_sec) * 1e3 +
              static_cast<double>(end.tv_nsec - start.tv_nsec) / 1e6;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::printf("%.3f %ld %d\n", ms, exact_rss ? exact_kib : usage.ru_maxrss, code);
  return 0;
}
