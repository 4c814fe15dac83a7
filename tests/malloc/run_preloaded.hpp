// Runs a program with libpoolalloc.so (or libpoolalloc-debug.so) preloaded and POOLALLOC_*
// options set, as the options tests do: its exit status and what it wrote on stderr.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

extern char** environ;

namespace options_test {

// A fresh directory under /tmp, removed with what it holds.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    char name[] = "/tmp/poolalloc-options-XXXXXX";
    if (mkdtemp(name) != nullptr) path_ = name;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string file_contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Run {
  int status = -1;  // the exit status, or 128 + the signal
  std::string err;
};

// Runs the shell command line `command` with `library` preloaded and `environment` ("VAR=value
// ...") set, in place of any POOLALLOC_* variable the tests inherited, in `directory` if one is
// given; stdout is thrown away.
inline Run run_preloaded(const std::string& environment, const std::string& command,
                         const char* library = POOLALLOC_LIBRARY,
                         const std::string& directory = "") {
  const ScratchDirectory scratch;
  const std::string err_path = scratch.path() + "/stderr";
  std::string line = directory.empty() ? "env" : "cd " + directory + " && env";
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("POOLALLOC_", 0) == 0) line += " -u " + text.substr(0, text.find('='));
  }
  line +=
      " " + environment + " LD_PRELOAD=" + library + " " + command + " >/dev/null 2>" + err_path;
  const int status = std::system(line.c_str());
  Run run;
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.err = file_contents(err_path);
  return run;
}

inline std::string stderr_of(const std::string& environment, const std::string& command) {
  return run_preloaded(environment, command).err;
}

// `text` with every "pid <digits>" made "pid N", for comparisons.
inline std::string without_pids(const std::string& text) {
  return std::regex_replace(text, std::regex("pid [0-9]+"), "pid N");
}

}  // namespace options_test
