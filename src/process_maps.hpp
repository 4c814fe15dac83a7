// The lines of /proc/self/maps, one mapping each, parsed as they are read through a buffer that
// the caller gives: nothing allocates, and nothing asks the dynamic loader (dladdr and
// dl_iterate_phdr take the loader's lock, which a thread inside dlopen may hold while it waits
// in malloc). The kernel writes the lines in address order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace poolalloc::internal {

struct ProcessMapping {
  std::uintptr_t start = 0;  // [start, end)
  std::uintptr_t end = 0;
  std::uintptr_t offset = 0;  // in the file, of the byte mapped at start
  bool readable = false;
  bool executable = false;
  // The file's path, "[vdso]" and the like, or empty for anonymous memory; it points into the
  // reader's buffer, valid until the next call of next().
  std::string_view path;
};

class ProcessMapsReader {
 public:
  // `buffer` must hold a whole line: a longer one is skipped (a path of thousands of bytes).
  ProcessMapsReader(char* buffer, std::size_t capacity);
  ~ProcessMapsReader();
  ProcessMapsReader(const ProcessMapsReader&) = delete;
  ProcessMapsReader& operator=(const ProcessMapsReader&) = delete;

  // The next mapping, or false at the end of the file, and when it could not be opened or read
  // (failed() then says so, and errno why).
  bool next(ProcessMapping& mapping);
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  // The next whole line in the buffer, reading more as needed; false at the end.
  bool next_line(const char*& line, const char*& end);

  int fd_;
  char* buffer_;
  std::size_t capacity_;
  std::size_t begin_ = 0;   // of the first byte not consumed yet
  std::size_t filled_ = 0;  // bytes read into the buffer
  bool failed_ = false;
};

}  // namespace poolalloc::internal
