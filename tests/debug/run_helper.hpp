// Runs the debug_helper program (its path is DEBUG_HELPER_PATH) with extra environment
// variables and returns how it exited and what it wrote to stdout and stderr.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace debug_test {

struct HelperResult {
  int status = -1;  // as waitpid gives it
  std::string out;
  std::string err;
};

inline std::string read_file(int fd) {
  std::string text;
  char buffer[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, std::size_t(n));
  return text;
}

// Writes stdout and stderr to unlinked temporary files, so no pipe can fill up and block.
inline HelperResult run_helper(const std::string& mode, const std::vector<std::string>& env) {
  HelperResult result;
  char out_name[] = "/tmp/debug_helper_out_XXXXXX";
  char err_name[] = "/tmp/debug_helper_err_XXXXXX";
  const int out = mkstemp(out_name);
  const int err = mkstemp(err_name);
  EXPECT_GE(out, 0);
  EXPECT_GE(err, 0);
  if (out < 0 || err < 0) return result;
  unlink(out_name);
  unlink(err_name);

  std::vector<std::string> variables = env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("POOLALLOC_", 0) != 0) variables.push_back(text);  // only ours set those
  }
  std::vector<char*> envp;
  for (auto& text : variables) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::string path = DEBUG_HELPER_PATH;
  std::string argument = mode;
  char* argv[] = {path.data(), argument.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(spawned, 0) << path;
  if (spawned == 0) {
    EXPECT_EQ(waitpid(pid, &result.status, 0), pid);
  }
  result.out = read_file(out);
  result.err = read_file(err);
  close(out);
  close(err);
  return result;
}

inline bool exited_with(const HelperResult& result, int code) {
  return WIFEXITED(result.status) && WEXITSTATUS(result.status) == code;
}

}  // namespace debug_test
