// What the heap profile's tests share: runs of a program with POOLALLOC_PROFILE_* options in a
// directory of its own, and `go tool pprof -top` read back into figures per function.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace profile_test {

// A fresh directory under the build tree's scratch space, removed when done.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    char path[] = "/tmp/poolalloc-profile-XXXXXX";
    path_ = mkdtemp(path);
  }
  ~ScratchDirectory() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  // The names of the files in it that start with `start`.
  std::vector<std::string> files_starting(const std::string& start) const {
    std::vector<std::string> names;
    if (DIR* dir = opendir(path_.c_str())) {
      while (dirent* entry = readdir(dir))
        if (std::string(entry->d_name).rfind(start, 0) == 0) names.push_back(entry->d_name);
      closedir(dir);
    }
    return names;
  }

 private:
  std::string path_;
};

// Runs `command` in `directory` with `environment` (NAME=value words) added to a copy of the
// test's environment without its POOLALLOC_* variables; the exit status, or -1.
inline int run_in(const std::string& directory, const std::string& environment,
                  const std::string& command) {
  const std::string line = "cd '" + directory +
                           "' && env $(env | grep -o '^POOLALLOC_[A-Z_]*' |"
                           " sed 's/^/-u /') " +
                           environment + " " + command + " >output 2>&1";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The figure of the functions whose names contain `name`, 0 when none does.
inline double figure_of(const std::map<std::string, double>& flat, const std::string& name) {
  double total = 0;
  for (const auto& [function, figure] : flat)
    if (function.find(name) != std::string::npos) total += figure;
  return total;
}

inline bool go_installed() {
  return std::system("command -v go >/dev/null 2>&1") == 0;
}

// Flat figures per function of `go tool pprof -top -unit=B -sample_index=INDEX BINARY PROFILE`
// (objects for the _objects indexes), and its whole output in *text.
inline std::map<std::string, double> pprof_top(const std::string& binary,
                                               const std::string& profile, const std::string& index,
                                               std::string* text = nullptr,
                                               const std::string& options = "") {
  const std::string command =
      "HOME=/tmp GOCACHE=/tmp/poolalloc-test-gocache go tool pprof -top "
      "-unit=B -nodecount=1000 -nodefraction=0 " +
      options + " -sample_index=" + index + " '" + binary + "' '" + profile + "' 2>&1";
  std::map<std::string, double> flat;
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    pclose(pipe);
  }
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.size() < 6 || fields[1].back() != '%') continue;
    std::string figure = fields[0];
    if (!figure.empty() && figure.back() == 'B') figure.pop_back();
    std::string name = fields[5];
    for (std::size_t i = 6; i < fields.size(); ++i) name += " " + fields[i];
    flat[name] += std::strtod(figure.c_str(), nullptr);
  }
  if (text != nullptr) *text = output;
  return flat;
}

}  // namespace profile_test
