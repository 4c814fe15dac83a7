// A one-line message built in a fixed buffer and written with write(2): usable where nothing
// may allocate (inside malloc, before main, in a dying process).
#pragma once

#include <pthread.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace poolalloc::detail {

class Message {
 public:
  Message& operator<<(std::string_view text) {
    for (char c : text) put(c);
    return *this;
  }
  // Without this, a string literal would pick the const void* overload below.
  Message& operator<<(const char* text) { return *this << std::string_view(text); }
  Message& operator<<(const void* p) { return hex(reinterpret_cast<std::uintptr_t>(p)); }
  Message& operator<<(std::uint64_t n) {
    char digits[20];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (count > 0) put(digits[--count]);
    return *this;
  }
  Message& operator<<(std::uint32_t n) { return *this << std::uint64_t{n}; }
  Message& operator<<(int n) {
    if (n < 0) put('-');
    return *this << static_cast<std::uint64_t>(n < 0 ? -static_cast<std::int64_t>(n) : n);
  }
  Message& hex(std::uint64_t n) {
    *this << "0x";
    int shift = 60;
    while (shift > 0 && ((n >> shift) & 0xf) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) put("0123456789abcdef"[(n >> shift) & 0xf]);
    return *this;
  }
  // Right-aligns what `write` appends in a field of `width` characters (for tables).
  template <class Write>
  Message& padded(int width, Write write) {
    const std::size_t start = length_;
    write(*this);
    const std::size_t written = length_ - start;
    if (written < static_cast<std::size_t>(width) && length_ + (width - written) <= kCapacity) {
      const std::size_t pad = width - written;
      for (std::size_t i = length_; i-- > start;) buffer_[i + pad] = buffer_[i];
      for (std::size_t i = 0; i < pad; ++i) buffer_[start + i] = ' ';
      length_ += pad;
    }
    return *this;
  }

  [[nodiscard]] std::string_view text() const { return {buffer_, length_}; }

  // Writes the whole buffer, retrying on short writes and EINTR; errors are ignored because
  // there is nowhere left to report them.
  void write_to(int fd) const {
    std::size_t done = 0;
    while (done < length_) {
      const ssize_t n = ::write(fd, buffer_ + done, length_ - done);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  static constexpr std::size_t kCapacity = 512;
  void put(char c) {
    if (length_ < kCapacity) buffer_[length_++] = c;
  }
  char buffer_[kCapacity];
  std::size_t length_ = 0;
};

// For its lifetime, the thread cannot be cancelled: an output started under it is finished.
// write(2), and the open and read of the files a report names things from, are cancellation
// points; a thread with a cancellation pending (deferred, the default) would otherwise be
// cancelled in the middle of a report, leaving it cut and any lock held then held for ever.
// glibc's malloc_stats does the same. The request is acted upon at the thread's next
// cancellation point after the output.
class NoCancellation {
 public:
  NoCancellation() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &saved_); }
  ~NoCancellation() { pthread_setcancelstate(saved_, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

 private:
  int saved_ = PTHREAD_CANCEL_ENABLE;
};

// Misuse that would otherwise corrupt memory: say what and where on stderr, then abort.
[[noreturn]] inline void fatal(Message& message) {
  const NoCancellation whole_report;  // the report, then abort: never a cancelled thread
  message << "\n";
  message.write_to(STDERR_FILENO);
  std::abort();
}

}  // namespace poolalloc::detail
