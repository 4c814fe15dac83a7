// Lines gathered in a fixed buffer and written with write(2) when it is full and when flushed:
// a statistics table goes out in one write (it fits), so that the tables of processes that
// append to one file, or write to one pipe, do not interleave. Nothing here allocates.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

class OutputBuffer {
 public:
  explicit OutputBuffer(int fd) : fd_(fd) {}
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  OutputBuffer& operator<<(const detail::Message& line) {
    append(line.text());
    return *this;
  }

  void append(std::string_view text) {
    while (!text.empty()) {
      if (length_ == kCapacity) flush();
      const std::size_t part =
          text.size() < kCapacity - length_ ? text.size() : kCapacity - length_;
      std::memcpy(buffer_ + length_, text.data(), part);
      length_ += part;
      text.remove_prefix(part);
    }
  }

  // Writes what the buffer holds, retrying short writes and EINTR. False once a write failed
  // (errno says why); what follows is then dropped.
  bool flush() {
    std::size_t done = 0;
    while (ok_ && done < length_) {
      const ssize_t n = ::write(fd_, buffer_ + done, length_ - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n == 0 || errno != EINTR) {
        if (n == 0) errno = EIO;
        ok_ = false;
      }
    }
    length_ = 0;
    return ok_;
  }
  // False once a write failed.
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  static constexpr std::size_t kCapacity = 8 << 10;  // a table of every size class fits
  int fd_;
  bool ok_ = true;
  std::size_t length_ = 0;
  char buffer_[kCapacity];
};

}  // namespace poolalloc::internal
