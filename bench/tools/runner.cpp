// bench-runner: runs one command and prints "WALL_MS MAXRSS_KB EXIT" on stdout.
//   bench-runner [--preload LIB] [--in FILE] [--out FILE] [--env NAME=VALUE]... -- COMMAND...
// Wall time is clock_gettime(CLOCK_MONOTONIC) around fork/exec/wait, in milliseconds with three
// decimals. Peak RSS is getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest of the command and of
// every process it waited for (g++ waits for cc1plus and as). LD_PRELOAD is set for the
// command only (and unset without --preload), never for the runner. The command's stdin comes
// from the --in FILE, its stdout and stderr go to the --out FILE (both default /dev/null).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const char* preload = nullptr;
  const char* in = "/dev/null";
  const char* out = "/dev/null";
  std::vector<std::string> env;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
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
                 "usage: %s [--preload LIB] [--in FILE] [--out FILE] [--env NAME=VALUE]... -- "
                 "COMMAND...\n",
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
    execvp(argv[i], argv + i);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) {
    std::perror("waitpid");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  double ms = static_cast<double>(end.tv_sec - start.tv_sec) * 1e3 +
              static_cast<double>(end.tv_nsec - start.tv_nsec) / 1e6;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::printf("%.3f %ld %d\n", ms, usage.ru_maxrss, code);
  return 0;
}
