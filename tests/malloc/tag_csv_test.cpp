// The memory tags' CSV (POOLALLOC_TAG_CSV, POOLALLOC_TAG_CSV_MS; docs/tuning.md): a header with
// the tags' names, a line every interval with the time and each tag's live bytes, written by the
// library's own thread, so that a program that idles gets its lines; and one more at exit.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "run_preloaded.hpp"

namespace {

using options_test::file_contents;
using options_test::run_preloaded;
using options_test::ScratchDirectory;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TagCsv, AProgramThatIdlesGetsALineEveryIntervalAndOneAtExit) {
  const ScratchDirectory scratch;
  const std::string csv = scratch.path() + "/tags-%p.csv";
  // The helper waits for the header and 3 lines without calling the allocator.
  const auto run = run_preloaded("POOLALLOC_TAG_CSV=" + csv + " POOLALLOC_TAG_CSV_MS=100",
                                 TAG_CSV_HELPER " " + csv + " 4");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
}

TEST(TagCsv, TheHeaderNamesTheTagsAndEachLineHasTheTimeAndEachTagsLiveBytes) {
  const ScratchDirectory scratch;
  const std::string csv = scratch.path() + "/tags.csv";
  const auto run = run_preloaded("POOLALLOC_TAG_CSV=" + csv + " POOLALLOC_TAG_CSV_MS=50",
                                 TAG_CSV_HELPER " " + csv + " 4");
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> lines = lines_of(file_contents(csv));
  ASSERT_GE(lines.size(), 5u);  // 4, and the one at exit
  // The first line may come before the program registered its tags: a header of its own.
  std::size_t header = 0;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].starts_with("ms,")) header = i;
  EXPECT_EQ(lines[header], "ms,untagged,AI,\"Render, 2D \"\"HUD\"\"\"");
  ASSERT_GE(lines.size() - header, 3u);
  std::uint64_t ms = 0, untagged = 0, ai = 0, render = 0;
  for (std::size_t i = header + 1; i < lines.size(); ++i) {
    const std::uint64_t last_ms = ms;
    char end = 0;
    ASSERT_EQ(
        std::sscanf(lines[i].c_str(), "%lu,%lu,%lu,%lu%c", &ms, &untagged, &ai, &render, &end), 4)
        << lines[i];
    EXPECT_GE(ms, last_ms) << lines[i];
  }
  // The line at exit, after the allocations (a line between the registration and the mallocs
  // may show less).
  EXPECT_EQ(ai, 16u * 4096) << lines.back();
  EXPECT_EQ(render, 1u << 20) << lines.back();
  EXPECT_GE(ms, 100u) << lines.back();  // two intervals at least before the last line
}

// A program that closes the descriptors it did not open and opens its own files, as daemons do,
// gets no line in them: the CSV holds no descriptor between its lines.
TEST(TagCsv, AProgramThatClosesAndReusesDescriptorsGetsNoLineInItsFiles) {
  const ScratchDirectory scratch;
  const std::string csv = scratch.path() + "/tags.csv";
  const std::string own = scratch.path() + "/own";
  const auto run = run_preloaded("POOLALLOC_TAG_CSV=" + csv + " POOLALLOC_TAG_CSV_MS=50",
                                 TAG_CSV_HELPER " " + csv + " 4 closes-descriptors " + own);
  EXPECT_EQ(run.status, 0) << run.err;  // 3: the program's file got a line
  EXPECT_EQ(file_contents(own), "");
  EXPECT_GE(lines_of(file_contents(csv)).size(), 5u);
}

// A header of 256 names of 63 bytes, which CSV quotes double, is 32 KiB: it goes out with the
// line under it in one write(2), as every line does.
TEST(TagCsv, EachLineGoesOutInOneWriteEvenUnderTheLongestHeader) {
  const ScratchDirectory scratch;
  const std::string csv = scratch.path() + "/tags.csv";
  // The first line comes after a second, well after the tags are registered: one header.
  const auto run = run_preloaded("POOLALLOC_TAG_CSV=" + csv + " POOLALLOC_TAG_CSV_MS=1000",
                                 TAG_CSV_HELPER " " + csv + " 2 every-tag");
  EXPECT_EQ(run.status, 0) << run.err;  // 4: more writes than lines
  const std::vector<std::string> lines = lines_of(file_contents(csv));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_GT(lines[0].size(), std::size_t{31} << 10);  // 253 names of 125 bytes, and 3 more
}

TEST(TagCsv, AWriteThatFailsIsSaidOnceOnStderr) {
  // /dev/full opens, and every write to it fails with ENOSPC.
  const auto run =
      run_preloaded("POOLALLOC_TAG_CSV=/dev/full POOLALLOC_TAG_CSV_MS=20", "sleep 0.2");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err,
            "poolalloc: cannot write the memory tags' CSV to /dev/full: No space left on device\n");
}

TEST(TagCsv, AFileThatCannotBeOpenedIsSaidOnStderr) {
  const auto run = run_preloaded("POOLALLOC_TAG_CSV=/nonexistent/tags.csv", "ls /");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err,
            "poolalloc: cannot write the memory tags' CSV to /nonexistent/tags.csv: No such file "
            "or directory\n");
}

}  // namespace
