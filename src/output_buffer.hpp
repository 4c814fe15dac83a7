// Lines gathered in a buffer and written with write(2) when it is full and when flushed. Text
// that must go out in one write (a statistics table, so that the tables of processes that append
// to one file do not interleave) asks for a buffer of its longest size, mapped for it. Nothing
// here allocates through malloc.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "os.hpp"
#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

class OutputBuffer {
 public:
  explicit OutputBuffer(int fd) : fd_(fd) {}
  // For text of up to `whole` bytes, written in one write(2) when flushed: in memory mapped for
  // it, which a large text would not find on a small stack. Where none can be mapped, the fixed
  // buffer serves, written a part at a time.
  OutputBuffer(int fd, std::size_t whole) : fd_(fd) {
    if (void* mapped = os_map(whole); mapped != nullptr) {
      buffer_ = static_cast<char*>(mapped);
      capacity_ = whole;
    }
  }
  ~OutputBuffer() {
    if (buffer_ != fixed_) os_unmap(buffer_, capacity_);
  }
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  OutputBuffer& operator<<(const detail::Message& line) {
    append(line.text());
    return *this;
  }

  void append(std::string_view text) {
    while (!text.empty()) {
      if (length_ == capacity_) flush();
      const std::size_t part =
          text.size() < capacity_ - length_ ? text.size() : capacity_ - length_;
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
  int fd_;
  bool ok_ = true;
  std::size_t length_ = 0;
  char fixed_[8 << 10];
  char* buffer_ = fixed_;
  std::size_t capacity_ = sizeof fixed_;
};

}  // namespace poolalloc::internal
