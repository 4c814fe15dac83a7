// The toolkit's one platform-specific piece: how a report reaches stderr without allocating, and
// how a thread is kept from being cancelled while it writes one. Everything else in the toolkit
// is standard C++20; a port to another platform changes this file alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#if defined(_WIN32)
#include <io.h>
#else
#include <pthread.h>
#include <unistd.h>
#endif

namespace poolalloc::detail {

// Writes all of `text` to the standard error descriptor, retrying short writes; errors are
// ignored because there is nowhere left to report them. Nothing is allocated, so a report can be
// written from inside an allocator or a dying process. On Windows, the C runtime's _write on
// descriptor 2 rather than std::fwrite to stderr: the stream's lock and the buffer the runtime may
// allocate for it on first use are what a report from a corrupted heap must not need.
inline void write_to_stderr(std::string_view text) {
  while (!text.empty()) {
#if defined(_WIN32)
    const int n =
        _write(2, text.data(), static_cast<unsigned>(std::min<std::size_t>(text.size(), 1u << 30)));
#else
    const auto n = ::write(STDERR_FILENO, text.data(), text.size());
#endif
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// For its lifetime, the thread cannot be cancelled: an output started under it is finished.
// write(2), and the open and read of the files a report names things from, are cancellation
// points; a thread with a cancellation pending (deferred, the default) would otherwise be
// cancelled in the middle of a report, leaving it cut and any lock held then held for ever.
// glibc's malloc_stats does the same. The request is acted upon at the thread's next
// cancellation point after the output. Windows threads have no deferred cancellation: nothing to
// hold off there.
#if defined(_WIN32)
// [[maybe_unused]]: a variable of this type does nothing here, and is not to be warned of.
class [[maybe_unused]] NoCancellation {
 public:
  NoCancellation() = default;
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;
};
#else
class NoCancellation {
 public:
  NoCancellation() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &saved_); }
  ~NoCancellation() { pthread_setcancelstate(saved_, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

 private:
  int saved_ = PTHREAD_CANCEL_ENABLE;
};
#endif

}  // namespace poolalloc::detail
