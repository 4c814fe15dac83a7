// go tool pprof reads the heap profile that profile_sample_program writes from a signal handler
// with every allocation trapped, names each call site (in the program and in a shared library),
// at the line of each call, with the values the program gave, and filters by the tag label.
// Skipped only where go is not installed (Debian's golang-go: scripts/install-deps.sh).
#include <stdlib.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "readelf_build_id.hpp"

namespace {

struct CommandRun {
  int status = -1;     // as waitpid gives it
  std::string output;  // stdout and stderr
};

CommandRun run(const std::string& command) {
  CommandRun result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char chunk[4096];
  for (std::size_t n; (n = fread(chunk, 1, sizeof chunk, pipe)) > 0;)
    result.output.append(chunk, n);
  result.status = pclose(pipe);
  return result;
}

bool go_installed() {
  return run("command -v go").status == 0;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) result.push_back(word);
  return result;
}

// The row of -top's table for `function` ("flat flat% sum% cum cum% function [file:line]"):
// its words, or none.
std::vector<std::string> top_row(const std::string& output, const std::string& function) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> row = words(line);
    if (row.size() >= 6 && row[5] == function) return row;
  }
  return {};
}

// The number of the first line of the program's source that holds `text`.
int source_line(const std::string& text) {
  std::ifstream source(PROFILE_SAMPLE_SOURCE);
  int number = 1;
  for (std::string line; std::getline(source, line); ++number)
    if (line.find(text) != std::string::npos) return number;
  ADD_FAILURE() << "no line holds " << text;
  return 0;
}

class PprofReadsTheProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/profile_pprof_test_XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    directory_ = name;
    profile_ = directory_ + "/heap.pb";
    const CommandRun program = run(std::string(PROFILE_SAMPLE_PROGRAM) + " " + profile_);
    ASSERT_EQ(program.status, 0) << program.output;
    if (!go_installed())
      GTEST_SKIP() << "go is not installed: go tool pprof reads the profile (Debian: golang-go)";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  // go needs a home and a cache it can write, pprof a directory for its files; an empty
  // PPROF_BINARY_PATH: the binaries are the files that the mappings name.
  CommandRun pprof(const std::string& options) const {
    const CommandRun result =
        run("env HOME=" + directory_ + " GOCACHE=" + directory_ +
            "/go-cache PPROF_TMPDIR=" + directory_ + " PPROF_BINARY_PATH=" + directory_ +
            " go tool pprof " + options + " " + PROFILE_SAMPLE_PROGRAM + " " + profile_);
    EXPECT_EQ(result.status, 0) << result.output;
    EXPECT_EQ(result.output.find("build ID mismatch"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("symbolization failed"), std::string::npos) << result.output;
    return result;
  }

  std::string directory_;
  std::string profile_;
};

TEST(ProfileSampleProgram, TheAllocationTrapAbortsAtAMalloc) {
  const CommandRun trapped = run(std::string(PROFILE_SAMPLE_PROGRAM) + " --trap");
  EXPECT_TRUE(WIFEXITED(trapped.status) && WEXITSTATUS(trapped.status) == 128 + SIGABRT)
      << "status " << trapped.status << "\n"
      << trapped.output;  // through the shell
  EXPECT_NE(trapped.output.find("allocation while the profile was written: malloc"),
            std::string::npos)
      << trapped.output;
}

TEST_F(PprofReadsTheProfile, TopNamesEachCallSiteWithTheSpaceItHoldsInUse) {
  const CommandRun top = pprof("-top -sample_index=inuse_space -unit=B");
  const std::vector<std::string> render = top_row(top.output, "profile_site_render_meshes");
  const std::vector<std::string> textures = top_row(top.output, "profile_site_load_textures");
  const std::vector<std::string> library = top_row(top.output, "profile_site_in_library");
  const std::vector<std::string> main = top_row(top.output, "main");
  ASSERT_FALSE(render.empty()) << top.output;
  ASSERT_FALSE(textures.empty()) << top.output;
  ASSERT_FALSE(library.empty()) << top.output;
  ASSERT_FALSE(main.empty()) << top.output;
  EXPECT_EQ(render[0], "1000000B") << "two samples of one stack, 500000 each";
  EXPECT_EQ(textures[0], "300000B");
  EXPECT_EQ(library[0], "1300000B");
  EXPECT_EQ(main[3], "2600000B") << "every stack passes through main";
}

TEST_F(PprofReadsTheProfile, TopGivesTheObjectsAllocatedAtEachCallSite) {
  const CommandRun top = pprof("-top -sample_index=alloc_objects");
  ASSERT_FALSE(top_row(top.output, "profile_site_render_meshes").empty()) << top.output;
  EXPECT_EQ(top_row(top.output, "profile_site_render_meshes")[0], "14");
  ASSERT_FALSE(top_row(top.output, "profile_site_load_textures").empty()) << top.output;
  EXPECT_EQ(top_row(top.output, "profile_site_load_textures")[0], "11");
  ASSERT_FALSE(top_row(top.output, "profile_site_in_library").empty()) << top.output;
  EXPECT_EQ(top_row(top.output, "profile_site_in_library")[0], "13");
}

TEST_F(PprofReadsTheProfile, TagFocusKeepsTheSamplesOfOneTag) {
  const CommandRun render = pprof("-top -sample_index=inuse_space -unit=B -tagfocus=tag=render");
  ASSERT_FALSE(top_row(render.output, "profile_site_render_meshes").empty()) << render.output;
  EXPECT_EQ(top_row(render.output, "profile_site_render_meshes")[0], "1000000B");
  EXPECT_TRUE(top_row(render.output, "profile_site_load_textures").empty()) << render.output;
  EXPECT_TRUE(top_row(render.output, "profile_site_in_library").empty()) << render.output;
  const CommandRun textures =
      pprof("-top -sample_index=inuse_space -unit=B -tagfocus=tag=textures");
  ASSERT_FALSE(top_row(textures.output, "profile_site_load_textures").empty()) << textures.output;
  EXPECT_EQ(top_row(textures.output, "profile_site_load_textures")[0], "300000B");
  EXPECT_TRUE(top_row(textures.output, "profile_site_render_meshes").empty()) << textures.output;
}

// main's call of profile_site_load_textures returns to the first instruction of the next line:
// the location at the address before it is the call's own line.
// Lines come from the DWARF, which pprof reads for a mapping that has functions only when forced
// (profiling.md).
TEST_F(PprofReadsTheProfile, EachFrameIsAtTheLineOfItsCall) {
  const CommandRun lines =
      pprof("-top -lines -symbolize=force -sample_index=inuse_space -tagfocus=tag=textures");
  const std::string source = PROFILE_SAMPLE_SOURCE;
  const std::vector<std::string> main = top_row(lines.output, "main");
  const std::vector<std::string> site = top_row(lines.output, "profile_site_load_textures");
  ASSERT_EQ(main.size(), 7u) << lines.output;
  ASSERT_EQ(site.size(), 7u) << lines.output;
  EXPECT_EQ(main[6], source + ":" +
                         std::to_string(source_line("  profile_site_load_textures(g_textures);")));
  // The function's one statement, the line after its name.
  EXPECT_EQ(site[6],
            source + ":" + std::to_string(source_line("void profile_site_load_textures(") + 1));
}

// -raw lists "id: start/limit/offset file build-id" for each mapping.
TEST_F(PprofReadsTheProfile, MappingsNameTheProgramFirstAndTheLibraryWithTheirBuildIds) {
  const CommandRun raw = pprof("-raw");
  const std::string mappings = raw.output.substr(raw.output.find("\nMappings\n"));
  std::istringstream lines(mappings);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);)
    if (words(line).size() >= 4) rows.push_back(words(line));
  ASSERT_FALSE(rows.empty()) << raw.output;
  // The paths as the kernel gives them in /proc/self/maps: without symbolic links.
  const std::string program = std::filesystem::canonical(PROFILE_SAMPLE_PROGRAM);
  const std::string library = std::filesystem::canonical(PROFILE_SAMPLE_SITES);
  EXPECT_EQ(rows[0][0], "1:");
  EXPECT_EQ(rows[0][2], program);
  EXPECT_EQ(rows[0][3], profile_test::readelf_build_id(program));
  bool library_listed = false;
  for (const std::vector<std::string>& row : rows) {
    if (row[2] != library) continue;
    library_listed = true;
    EXPECT_EQ(row[3], profile_test::readelf_build_id(library));
  }
  EXPECT_TRUE(library_listed) << raw.output;
}

}  // namespace
