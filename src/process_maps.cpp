#include "process_maps.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace poolalloc::internal {
namespace {

std::uintptr_t parse_hex(const char*& text, const char* end) {
  std::uintptr_t value = 0;
  for (; text < end; ++text) {
    const char c = *text;
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) break;
    value = value << 4 | static_cast<std::uintptr_t>(digit);
  }
  return value;
}

void skip_spaces(const char*& text, const char* end) {
  while (text < end && *text == ' ') ++text;
}

// Past one field and the spaces after it.
void skip_field(const char*& text, const char* end) {
  while (text < end && *text != ' ') ++text;
  skip_spaces(text, end);
}

}  // namespace

ProcessMapsReader::ProcessMapsReader(char* buffer, std::size_t capacity)
    : fd_(open("/proc/self/maps", O_RDONLY | O_CLOEXEC)), buffer_(buffer), capacity_(capacity) {
  failed_ = fd_ < 0;
}

ProcessMapsReader::~ProcessMapsReader() {
  if (fd_ >= 0) close(fd_);
}

bool ProcessMapsReader::next_line(const char*& line, const char*& end) {
  bool skipping = false;  // inside a line longer than the buffer
  for (;;) {
    char* const start = buffer_ + begin_;
    if (auto* newline = static_cast<char*>(std::memchr(start, '\n', filled_ - begin_))) {
      begin_ = static_cast<std::size_t>(newline + 1 - buffer_);
      if (!skipping) {
        line = start;
        end = newline;
        return true;
      }
      skipping = false;
      continue;
    }
    // No whole line left: the part of one moves to the buffer's start, and more is read after it.
    if (begin_ == 0 && filled_ == capacity_) {
      skipping = true;
      filled_ = 0;
    } else {
      std::memmove(buffer_, start, filled_ - begin_);
      filled_ -= begin_;
      begin_ = 0;
    }
    if (failed_) return false;
    const ssize_t got = read(fd_, buffer_ + filled_, capacity_ - filled_);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      failed_ = got < 0;
      return false;  // the kernel ends every line with a newline: nothing is left
    }
    filled_ += static_cast<std::size_t>(got);
  }
}

// "start-end perms offset dev inode   path", the path absent for anonymous memory.
bool ProcessMapsReader::next(ProcessMapping& mapping) {
  const char* text = nullptr;
  const char* end = nullptr;
  if (!next_line(text, end)) return false;
  mapping.start = parse_hex(text, end);
  ++text;  // '-'
  mapping.end = parse_hex(text, end);
  skip_spaces(text, end);
  mapping.readable = end - text > 0 && text[0] == 'r';
  mapping.executable = end - text > 2 && text[2] == 'x';
  skip_field(text, end);
  mapping.offset = parse_hex(text, end);
  skip_spaces(text, end);
  skip_field(text, end);  // the device
  skip_field(text, end);  // the inode
  mapping.path = std::string_view(text, static_cast<std::size_t>(end - text));
  return true;
}

}  // namespace poolalloc::internal
