/* A C program loads no C++ runtime, and libpoolalloc.so brings none (a C program would pay
 * 1.3 MiB of resident memory for it). operator new, reached as a C++ library that a C program
 * opened would reach it, then cannot throw std::bad_alloc while none is loaded: its nothrow form
 * returns NULL, and its throwing form reports running out of memory and aborts. Once the
 * program opens a C++ library (argv[1]) with RTLD_GLOBAL or RTLD_LOCAL (argv[2]: global or
 * local), operator new throws, calls the new-handler and returns NULL from its nothrow forms as
 * the standard says, through the runtime that library brought. */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void* (*NothrowNew)(size_t, const void*);
typedef void* (*New)(size_t);

static int fail(const char* what) {
  fprintf(stderr, "%s\n", what);
  return 1;
}

/* Runs operator new(SIZE_MAX / 2) in a child whose stderr is `report`; its exit status. */
static int status_of_throwing_new(New throwing_new, char* report, size_t capacity) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_ends[1], STDERR_FILENO);
    throwing_new(SIZE_MAX / 2);
    _exit(0);
  }
  close(pipe_ends[1]);
  size_t length = 0;
  ssize_t got;
  while (length + 1 < capacity &&
         (got = read(pipe_ends[0], report + length, capacity - 1 - length)) > 0)
    length += (size_t)got;
  report[length] = '\0';
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

typedef int (*PluginCheck)(void);

/* Opens the C++ library `path` (with RTLD_GLOBAL, or RTLD_LOCAL) and runs its checks; 0 when
 * all passed. */
static int check_with_a_runtime_loaded_later(const char* path, int scope) {
  void* plugin = dlopen(path, RTLD_NOW | scope);
  if (plugin == NULL) return fail(dlerror());
  static const char* const checks[] = {
      "plugin_small_new_works",
      "plugin_new_throws_bad_alloc",
      "plugin_new_calls_the_handler_then_throws",
      "plugin_nothrow_new_calls_the_handler_then_returns_null",
      "plugin_aligned_new_throws_bad_alloc",
      "plugin_aligned_new_refuses_an_alignment_not_a_power_of_two",
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; ++i) {
    const PluginCheck check = (PluginCheck)dlsym(plugin, checks[i]);
    if (check == NULL || check() != 1) {
      fprintf(stderr, "failed: %s\n", checks[i]);
      ++failures;
    }
  }
  return failures;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[2], "global") != 0 && strcmp(argv[2], "local") != 0))
    return fail("usage: no_cxx_runtime_test CXX_PLUGIN global|local");
  if (dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD) != NULL)
    return fail("libstdc++ is loaded in a C program linked with poolalloc");
  const NothrowNew nothrow_new = (NothrowNew)dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
  const New throwing_new = (New)dlsym(RTLD_DEFAULT, "_Znwm");
  if (nothrow_new == NULL || throwing_new == NULL) return fail("operator new is not exported");
  const char nothrow_tag = 0;
  if (nothrow_new(64, &nothrow_tag) == NULL) return fail("nothrow new of 64 bytes failed");
  if (nothrow_new(SIZE_MAX / 2, &nothrow_tag) != NULL)
    return fail("nothrow new of SIZE_MAX / 2 bytes did not return NULL");
  char report[512];
  const int status = status_of_throwing_new(throwing_new, report, sizeof report);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
    return fail("operator new without a C++ runtime did not abort");
  if (strstr(report, "): out of memory, and no C++ runtime is loaded") == NULL) {
    fprintf(stderr, "operator new's report: \"%s\"\n", report);
    return 1;
  }
  return check_with_a_runtime_loaded_later(
      argv[1], strcmp(argv[2], "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL);
}
