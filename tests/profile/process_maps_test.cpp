// The reader of /proc/self/maps: each line's bounds, permissions, file offset and path, for
// mappings the test makes itself, and a line longer than the reader's buffer skipped whole.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "process_maps.hpp"

namespace {

using namespace poolalloc::internal;

struct Line {
  ProcessMapping mapping;
  std::string path;  // a copy: the mapping's points into the reader's buffer
};

std::vector<Line> read_maps(std::size_t buffer_size) {
  std::vector<char> buffer(buffer_size);
  ProcessMapsReader reader(buffer.data(), buffer.size());
  std::vector<Line> lines;
  ProcessMapping mapping;
  while (reader.next(mapping)) lines.push_back({mapping, std::string(mapping.path)});
  EXPECT_FALSE(reader.failed());
  return lines;
}

const Line* line_at(const std::vector<Line>& lines, const void* start) {
  for (const Line& line : lines)
    if (line.mapping.start == reinterpret_cast<std::uintptr_t>(start)) return &line;
  return nullptr;
}

// A file of three pages under /tmp, with a name of `name_length` bytes, removed at the end.
class ScratchFile {
 public:
  explicit ScratchFile(std::size_t name_length) {
    std::string name = "/tmp/process_maps_test_XXXXXX";
    name.insert(name.size() - 6, std::string(name_length - name.size(), 'n'));
    fd_ = mkstemp(name.data());
    path_ = name;
    EXPECT_GE(fd_, 0) << name;
    EXPECT_EQ(ftruncate(fd_, 3 * 4096), 0);
  }
  ~ScratchFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// The kernel merges an anonymous mapping with a neighbour of the same permissions: PROT_EXEC
// alone keeps this one apart from the heap and the stacks around it.
void* map_anonymous_code(std::size_t bytes) {
  return mmap(nullptr, bytes, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

TEST(ProcessMaps, GivesAFileMappingsBoundsPermissionsOffsetAndPath) {
  const ScratchFile file(40);
  void* mapped = mmap(nullptr, 2 * 4096, PROT_READ, MAP_PRIVATE, file.fd(), 4096);
  ASSERT_NE(mapped, MAP_FAILED);
  const std::vector<Line> lines = read_maps(4096);
  munmap(mapped, 2 * 4096);
  const Line* line = line_at(lines, mapped);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->mapping.end, reinterpret_cast<std::uintptr_t>(mapped) + 2 * 4096);
  EXPECT_EQ(line->mapping.offset, 4096u);
  EXPECT_TRUE(line->mapping.readable);
  EXPECT_FALSE(line->mapping.executable);
  EXPECT_EQ(line->path, file.path());
}

TEST(ProcessMaps, GivesAnonymousMemoryAnEmptyPath) {
  void* code = map_anonymous_code(4096);
  ASSERT_NE(code, MAP_FAILED);
  const std::vector<Line> lines = read_maps(4096);
  munmap(code, 4096);
  const Line* line = line_at(lines, code);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->mapping.end, reinterpret_cast<std::uintptr_t>(code) + 4096);
  EXPECT_EQ(line->mapping.offset, 0u);
  EXPECT_TRUE(line->mapping.readable);
  EXPECT_TRUE(line->mapping.executable);
  EXPECT_EQ(line->path, "");
}

TEST(ProcessMaps, NamesTheProgramsFileForItsCode) {
  char program[PATH_MAX];
  ASSERT_NE(realpath("/proc/self/exe", program), nullptr);
  const auto code = reinterpret_cast<std::uintptr_t>(&read_maps);
  const std::vector<Line> lines = read_maps(4096);
  const Line* holder = nullptr;
  for (const Line& line : lines)
    if (code - line.mapping.start < line.mapping.end - line.mapping.start) holder = &line;
  ASSERT_NE(holder, nullptr);
  EXPECT_TRUE(holder->mapping.executable);
  EXPECT_EQ(holder->path, program);
}

TEST(ProcessMaps, ALineLongerThanTheBufferIsSkippedAndTheNextOneRead) {
  const ScratchFile file(250);  // a file name has 255 bytes at most
  // Two pages of code, the first replaced by the file's: the file's line comes right before the
  // code's.
  auto* area = static_cast<char*>(map_anonymous_code(2 * 4096));
  ASSERT_NE(area, MAP_FAILED);
  void* mapped = mmap(area, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, file.fd(), 0);
  ASSERT_EQ(mapped, area);
  void* code = area + 4096;
  const std::vector<Line> whole = read_maps(4096);
  const std::vector<Line> short_lines = read_maps(128);  // an anonymous mapping's line fits
  munmap(area, 2 * 4096);
  ASSERT_NE(line_at(whole, mapped), nullptr);
  EXPECT_EQ(line_at(whole, mapped)->path, file.path());
  EXPECT_EQ(line_at(short_lines, mapped), nullptr);
  ASSERT_NE(line_at(short_lines, code), nullptr);
  EXPECT_TRUE(line_at(short_lines, code)->mapping.executable);
  EXPECT_EQ(line_at(short_lines, code)->path, "");
  // Every line of a file that fits is read as with a larger buffer (anonymous memory may have
  // come and gone in between: the allocator's, a sanitizer's).
  for (const Line& line : short_lines) {
    if (line.path.empty() || line.path[0] != '/') continue;
    const Line* same = line_at(whole, reinterpret_cast<const void*>(line.mapping.start));
    ASSERT_NE(same, nullptr) << line.path;
    EXPECT_EQ(line.path, same->path);
    EXPECT_EQ(line.mapping.end, same->mapping.end) << line.path;
    EXPECT_EQ(line.mapping.offset, same->mapping.offset) << line.path;
  }
}

}  // namespace
