// The command line of this process, as the statistics table names the program: read from
// /proc/self/cmdline into a fixed buffer (no malloc), its arguments separated by spaces, cut
// after kShown bytes. Empty where /proc cannot be read. On Windows, the process's own command
// line (GetCommandLineA), as its creator wrote it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "platform.hpp"

#if POOLALLOC_LINUX
#include <fcntl.h>
#include <unistd.h>
#else
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#endif

namespace poolalloc::internal {

class CommandLine {
 public:
  static constexpr std::size_t kShown = 120;

  CommandLine() {
#if !POOLALLOC_LINUX
    const char* line = GetCommandLineA();
    length_ = std::min(std::strlen(line), sizeof text_);
    std::memcpy(text_, line, length_);
    while (length_ > 0 && text_[length_ - 1] == ' ') --length_;
#else
    const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    while (length_ < sizeof text_) {
      const ssize_t n = ::read(fd, text_ + length_, sizeof text_ - length_);
      if (n <= 0) break;
      length_ += static_cast<std::size_t>(n);
    }
    ::close(fd);
    while (length_ > 0 && (text_[length_ - 1] == '\0' || text_[length_ - 1] == ' ')) --length_;
    for (std::size_t i = 0; i < length_; ++i) {
      if (text_[i] == '\0') text_[i] = ' ';
    }
#endif
  }

  // The whole of it, or more than kShown bytes: append_shown(message, text(), kShown) cuts it.
  [[nodiscard]] std::string_view text() const {
    return {text_, length_};
  }

 private:
  char text_[kShown + 8];  // past kShown: enough to know that there is more
  std::size_t length_ = 0;
};

}  // namespace poolalloc::internal
