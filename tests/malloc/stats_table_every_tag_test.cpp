// statistics.md, "Where the table goes": each table is written in one write(2), so the tables of
// processes that append to one file do not interleave; this holds of the largest table too, with
// a row for every tag and every name as long as a name may be (63 bytes).
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "poolalloc/poolalloc.h"
#include "run_preloaded.hpp"

namespace {

// Registers tags of 63-byte names until no id is left (other tests of this process may have
// taken some): the table then has a row for each of the 256 tags.
void register_every_tag() {
  for (int i = 0;; ++i) {
    std::string name = "EveryTag" + std::to_string(i);
    name.resize(63, 'x');
    if (poolalloc_tag_register(name.c_str()) == -1) {
      EXPECT_EQ(errno, ENOSPC);
      return;
    }
    ASSERT_LT(i, 256);
  }
}

constexpr std::string_view kTitle = "poolalloc statistics of pid ";
constexpr std::string_view kLastLine = "resident in RAM, of both: ";

// Whether `text` is one whole table: its title first, its last line last and once.
bool is_one_table(std::string_view text) {
  const std::size_t last = text.find(kLastLine);
  return text.starts_with(kTitle) && text.ends_with("\n") && last != std::string_view::npos &&
         text.find('\n', last) == text.size() - 1 && text.find(kTitle, 1) == std::string_view::npos;
}

std::ptrdiff_t lines_of(std::string_view text) {
  return std::count(text.begin(), text.end(), '\n');
}

// A socket of SOCK_SEQPACKET keeps each write(2) a message of its own: the first message read is
// what the first write wrote.
TEST(StatsTable, TheLargestTableIsWrittenInOneWrite) {
  register_every_tag();
  int ends[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends), 0);
  poolalloc_print_stats(ends[0]);
  std::vector<char> message(1 << 20);
  const ssize_t first = recv(ends[1], message.data(), message.size(), MSG_DONTWAIT);
  ASSERT_GT(first, 0);
  const std::string_view table(message.data(), static_cast<std::size_t>(first));
  EXPECT_GT(table.size(), std::size_t{16} << 10);  // 256 rows of 63-byte names
  EXPECT_TRUE(is_one_table(table)) << table.substr(0, 200) << "\n...\n"
                                   << table.substr(table.size() - 200);
  EXPECT_EQ(recv(ends[1], message.data(), message.size(), MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  close(ends[0]);
  close(ends[1]);
}

TEST(StatsTable, TablesOfProcessesThatAppendToOneFileDoNotInterleave) {
  register_every_tag();
  const options_test::ScratchDirectory scratch;
  const std::string path = scratch.path() + "/tables";
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  constexpr int kChildren = 8;
  constexpr int kTablesEach = 5;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      for (int t = 0; t < kTablesEach; ++t) poolalloc_print_stats(fd);
      _exit(0);
    }
    ASSERT_GT(child, 0);
    children.push_back(child);
  }
  for (const pid_t child : children) {
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  close(fd);
  const std::string text = options_test::file_contents(path);
  std::vector<std::string_view> tables;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t next = text.find(kTitle, at + 1);
    if (next == std::string::npos) next = text.size();
    tables.push_back(std::string_view(text).substr(at, next - at));
    at = next;
  }
  ASSERT_EQ(tables.size(), std::size_t{kChildren * kTablesEach});
  for (const std::string_view table : tables)
    ASSERT_TRUE(is_one_table(table) && lines_of(table) == lines_of(tables.front()))
        << table.substr(0, 200) << "\n...\n"
        << table.substr(table.size() > 200 ? table.size() - 200 : 0);
}

}  // namespace
