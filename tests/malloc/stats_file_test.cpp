// The statistics table as users read it (the program named, sizes in units, a legend), and
// POOLALLOC_STATS_FILE: one file per process with "%p", whole tables one after the other in a
// shared file without it, and one clear line on stderr, at most, when the file cannot be
// written.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_preloaded.hpp"

namespace {

using options_test::file_contents;
using options_test::run_preloaded;
using options_test::ScratchDirectory;
using options_test::stderr_of;

struct Table {
  long pid = 0;
  std::string program;  // as the title names it
  int rows = 0;         // size classes
};

// The tables in `text`, which must be nothing but whole tables, one after the other: a title,
// three lines of legend, the column header, a row per size class in use, seven totals.
testing::AssertionResult parse_tables(const std::string& text, std::vector<Table>* tables) {
  const std::string bytes = R"(\d+(\.\d)? (B|KiB|MiB|GiB|TiB))";
  const std::regex title(R"(poolalloc statistics of pid (\d+)(: (.*))?)");
  const std::regex row(R"( *\d+ +\d+(\.\d+)? (B|KiB) +\d+ +\d+ +\d+ +\d+ +\d+ +)" + bytes);
  const std::regex totals[] = {
      std::regex(R"(pooled requests: \d+)"),
      std::regex(R"(system-forwarded requests: \d+ \()" + bytes + R"(\))"),
      std::regex("large blocks kept for reuse: " + bytes +
                 R"( \(\d+ blocks; \d+ requests served from them\))"),
      std::regex(R"(thread caches in use: \d+)"),
      std::regex("held by the size classes: " + bytes),
      std::regex("retained empty spans: " + bytes + R"( \(kept for reuse\))"),
      std::regex("resident in RAM, of both: " + bytes),
  };
  const std::string header =
      "class  block size    requests       frees        live        peak   spans        held";
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto next = [&] {
    ++number;
    return static_cast<bool>(std::getline(in, line));
  };
  auto failure = [&](const char* expected) {
    return testing::AssertionFailure()
           << "line " << number << ": expected " << expected << ", got [" << line << "] in:\n"
           << text;
  };
  while (next()) {
    std::smatch match;
    if (!std::regex_match(line, match, title)) return failure("a title");
    Table table{std::stol(match[1]), match[3], 0};
    for (int i = 0; i < 3; ++i) {
      if (!next() || !line.starts_with("  ") || line.size() > 90) return failure("the legend");
    }
    if (!next() || line != header) return failure("the column header");
    while (next() && std::regex_match(line, row)) ++table.rows;
    for (std::size_t i = 0; i < std::size(totals); ++i) {
      if ((i > 0 && !next()) || !std::regex_match(line, totals[i])) return failure("a total");
    }
    tables->push_back(table);
  }
  if (tables->empty()) return testing::AssertionFailure() << "no table in [" << text << "]";
  return testing::AssertionSuccess();
}

std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename());
  return names;
}

std::set<long> pids_in(const std::string& path) {
  std::set<long> pids;
  std::istringstream in(file_contents(path));
  for (long pid = 0; in >> pid;) pids.insert(pid);
  return pids;
}

TEST(StatsTable, NamesTheProgramAndStatesItsUnits) {
  std::vector<Table> tables;
  ASSERT_TRUE(parse_tables(stderr_of("POOLALLOC_STATS=1", "ls /"), &tables));
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].program, "ls /");
  EXPECT_GT(tables[0].rows, 0);
}

// The command line is cut after 120 bytes, not inside a UTF-8 character; control characters
// in it are shown as '?'.
TEST(StatsTable, ALongCommandLineIsCut) {
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";  // é
  std::vector<Table> tables;
  ASSERT_TRUE(parse_tables(stderr_of("POOLALLOC_STATS=1", "/bin/echo x" + accents), &tables));
  ASSERT_EQ(tables.size(), 1u);
  // "/bin/echo x" is 11 bytes: 109 more would end inside an é, so 108 are shown.
  EXPECT_EQ(tables[0].program, "/bin/echo x" + accents.substr(0, 108) + "...");
  tables.clear();
  ASSERT_TRUE(
      parse_tables(stderr_of("POOLALLOC_STATS=1", "/bin/echo \"$(printf 'a\\tb')\""), &tables));
  EXPECT_EQ(tables[0].program, "/bin/echo a?b");
}

TEST(StatsFile, TheTableGoesToTheFileOnly) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path() + "/stats.txt";
  const auto run = run_preloaded("POOLALLOC_STATS=1 POOLALLOC_STATS_FILE=" + path, "ls /");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
  std::vector<Table> tables;
  ASSERT_TRUE(parse_tables(file_contents(path), &tables));
  EXPECT_EQ(tables.size(), 1u);
  // Created with 0644 less the umask; an existing file is appended to.
  const mode_t mask = umask(0);
  umask(mask);
  struct stat status {};
  ASSERT_EQ(stat(path.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0644 & ~mask);
  run_preloaded("POOLALLOC_STATS_FILE=" + path, "ls /");
  tables.clear();
  ASSERT_TRUE(parse_tables(file_contents(path), &tables));
  EXPECT_EQ(tables.size(), 2u);
}

// "%p" is each process's own id: the parent and each child it forks write a file of their own;
// "%%" is a '%'.
TEST(StatsFile, PercentPIsTheIdOfTheProcessThatExits) {
  const ScratchDirectory scratch;
  const std::string children = scratch.path() + "/children";
  const auto run = run_preloaded("POOLALLOC_STATS_FILE=" + scratch.path() + "/%%-%p.txt",
                                 STATS_FD_HELPER " fork 2 " + children);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
  std::set<long> pids = pids_in(children);
  ASSERT_EQ(pids.size(), 2u);
  int parents = 0;
  for (const std::string& name : files_in(scratch.path())) {
    if (name == "children") continue;
    std::vector<Table> tables;
    ASSERT_TRUE(parse_tables(file_contents(scratch.path() + "/" + name), &tables));
    ASSERT_EQ(tables.size(), 1u) << name;
    EXPECT_EQ(name, "%-" + std::to_string(tables[0].pid) + ".txt");
    EXPECT_TRUE(tables[0].program.starts_with(STATS_FD_HELPER " fork 2 ")) << tables[0].program;
    if (pids.erase(tables[0].pid) == 0) ++parents;
  }
  EXPECT_TRUE(pids.empty()) << "children without a file";
  EXPECT_EQ(parents, 1);
}

// A hundred children exit at once. With "%p", a file each; without, one file where each of the
// 101 tables is whole (each is written with one write to a file opened O_APPEND).
TEST(StatsFile, AHundredChildrenWithAndWithoutPercentP) {
  const ScratchDirectory scratch;
  const std::string each = scratch.path() + "/each";
  const std::string shared = scratch.path() + "/shared";
  std::filesystem::create_directory(each);
  std::filesystem::create_directory(shared);
  auto run = run_preloaded("POOLALLOC_STATS_FILE=" + each + "/%p",
                           STATS_FD_HELPER " fork 100 " + scratch.path() + "/children-each");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(files_in(each).size(), 101u);
  std::set<long> pids = pids_in(scratch.path() + "/children-each");
  for (long pid : pids) EXPECT_TRUE(std::filesystem::exists(each + "/" + std::to_string(pid)));

  run = run_preloaded("POOLALLOC_STATS_FILE=" + shared + "/stats",
                      STATS_FD_HELPER " fork 100 " + scratch.path() + "/children-shared");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
  std::vector<Table> tables;
  ASSERT_TRUE(parse_tables(file_contents(shared + "/stats"), &tables));
  ASSERT_EQ(tables.size(), 101u);
  pids = pids_in(scratch.path() + "/children-shared");
  std::set<long> seen;
  for (const Table& table : tables) seen.insert(table.pid);
  EXPECT_EQ(seen.size(), 101u);
  for (long pid : pids) EXPECT_EQ(seen.count(pid), 1u) << pid;
}

// An exec'd program is the same process: it writes the file, the shell it replaced does not.
TEST(StatsFile, AnExecdProgramWritesTheFile) {
  const ScratchDirectory scratch;
  const auto run =
      run_preloaded("POOLALLOC_STATS_FILE=" + scratch.path() + "/%p", "sh -c 'exec ls /'");
  EXPECT_EQ(run.err, "");
  const auto names = files_in(scratch.path());
  ASSERT_EQ(names.size(), 1u);
  std::vector<Table> tables;
  ASSERT_TRUE(parse_tables(file_contents(scratch.path() + "/" + names[0]), &tables));
  EXPECT_EQ(tables[0].program, "ls /");
}

// A relative path is taken from the directory the program started in, not the one it exits in.
TEST(StatsFile, ARelativePathIsTheStartingDirectorys) {
  const ScratchDirectory scratch;
  const auto run = run_preloaded("POOLALLOC_STATS_FILE=stats.txt", STATS_FD_HELPER " chdir",
                                 POOLALLOC_LIBRARY, scratch.path());
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
  std::vector<Table> tables;
  EXPECT_TRUE(parse_tables(file_contents(scratch.path() + "/stats.txt"), &tables));
}

TEST(StatsFile, AMissingDirectoryIsOneLineOnStderr) {
  const auto run = run_preloaded("POOLALLOC_STATS_FILE=/nonexistent-poolalloc/s-%p.txt", "ls /");
  EXPECT_EQ(run.status, 0);
  EXPECT_TRUE(std::regex_match(
      run.err, std::regex("poolalloc: cannot write the statistics to /nonexistent-poolalloc/"
                          "s-[0-9]+\\.txt: No such file or directory\n")))
      << run.err;
}

TEST(StatsFile, ADirectoryThatCannotBeWrittenIsOneLineOnStderr) {
  EXPECT_EQ(stderr_of("POOLALLOC_STATS_FILE=/etc/hostname/stats", "ls /"),
            "poolalloc: cannot write the statistics to /etc/hostname/stats: Not a directory\n");
  const ScratchDirectory scratch;
  chmod(scratch.path().c_str(), 0555);
  if (access(scratch.path().c_str(), W_OK) == 0) GTEST_SKIP() << "root writes anywhere";
  EXPECT_EQ(stderr_of("POOLALLOC_STATS_FILE=" + scratch.path() + "/stats", "ls /"),
            "poolalloc: cannot write the statistics to " + scratch.path() +
                "/stats: Permission denied\n");
}

// A daemon that closed stderr and opened its own file on fd 2 hears nothing of it.
TEST(StatsFile, NothingGoesToAFileThatTookStderrsPlace) {
  const ScratchDirectory scratch;
  const std::string data = scratch.path() + "/data";
  const auto run = run_preloaded("POOLALLOC_STATS_FILE=/nonexistent-poolalloc/stats",
                                 STATS_FD_HELPER " daemon-all " + data);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(file_contents(data), "payload\n");
  EXPECT_EQ(run.err, "");
}

// A FIFO that nobody reads must not hold up the exit.
TEST(StatsFile, AFifoWithoutReaderDoesNotHoldUpTheExit) {
  const ScratchDirectory scratch;
  const std::string fifo = scratch.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(stderr_of("POOLALLOC_STATS_FILE=" + fifo, "ls /"),
            "poolalloc: cannot write the statistics to " + fifo + ": No such device or address\n");
}

// A path too long for the system is refused at start-up; one that "%p" makes too long, at exit.
TEST(StatsFile, PathsTooLong) {
  const std::string path = "/tmp/" + std::string(5000, 'd');
  EXPECT_EQ(stderr_of("POOLALLOC_STATS_FILE=" + path, "ls /"),
            "poolalloc: ignoring POOLALLOC_STATS_FILE=" + path.substr(0, 80) +
                "... (expected a path of at most 4095 bytes); using none\n");
  const std::string grows = "/tmp/" + std::string(4080, 'd') + "%p%p%p%p%p";
  EXPECT_EQ(stderr_of("POOLALLOC_STATS_FILE=" + grows, "ls /"),
            "poolalloc: cannot write the statistics to " + grows.substr(0, 200) +
                "...: File name too long\n");
}

}  // namespace
