// What `readelf -n FILE` prints after "Build ID: ": the build ID that the profile tests expect,
// read from the file by another program.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>

namespace profile_test {

inline std::string readelf_build_id(const std::string& file) {
  FILE* pipe = popen(("readelf -n '" + file + "'").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  char chunk[4096];
  for (std::size_t n; (n = fread(chunk, 1, sizeof chunk, pipe)) > 0;) output.append(chunk, n);
  pclose(pipe);
  const std::size_t at = output.find("Build ID: ");
  if (at == std::string::npos) return "";
  const std::size_t begin = at + std::strlen("Build ID: ");
  return output.substr(begin, output.find('\n', begin) - begin);
}

}  // namespace profile_test
