// The POOLALLOC_* options, seen from outside: a program run with the library preloaded and an
// option set, its stderr captured.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "poolalloc/poolalloc.h"

#include "run_preloaded.hpp"

namespace {

using options_test::file_contents;
using options_test::run_preloaded;
using options_test::ScratchDirectory;
using options_test::stderr_of;
using options_test::without_pids;

TEST(Options, SilentByDefault) {
  EXPECT_EQ(stderr_of("", "ls /"), "");
}

// Every option the library knows, each at its default value, and the wrapper's
// POOLALLOC_BUILD_DIR: nothing is reported, by either build.
TEST(Options, EveryKnownOptionIsSilentAtItsDefault) {
  const std::string all =
      "POOLALLOC_STATS=0 POOLALLOC_STATS_FILE= POOLALLOC_VERBOSE=0 POOLALLOC_MAX_POOLED=32768 "
      "POOLALLOC_DECAY_MS=1000 POOLALLOC_DECAY_THREAD=1 POOLALLOC_REGION_SIZE=64G "
      "POOLALLOC_ON_ERROR=abort "
      "POOLALLOC_LEAKS=0 POOLALLOC_QUARANTINE=16M POOLALLOC_BUILD_DIR=/nonexistent "
      "POOLALLOC_PROFILE=0 POOLALLOC_PROFILE_SAMPLE=512K POOLALLOC_PROFILE_PREFIX=poolalloc "
      "POOLALLOC_PROFILE_AT_EXIT=1 POOLALLOC_PROFILE_EVERY=0 POOLALLOC_PROFILE_PEAK=0 "
      "POOLALLOC_TAG_CSV= POOLALLOC_TAG_CSV_MS=1000";
  EXPECT_EQ(stderr_of(all, "ls /"), "");
  EXPECT_EQ(run_preloaded(all, "ls /", POOLALLOC_DEBUG_LIBRARY).err, "");
}

// tuning.md: a variable set to the empty string is the same as an unset one, for every option.
TEST(Options, AnEmptyValueIsTheSameAsAnUnsetVariable) {
  const std::string all =
      "POOLALLOC_STATS= POOLALLOC_STATS_FILE= POOLALLOC_VERBOSE= POOLALLOC_MAX_POOLED= "
      "POOLALLOC_DECAY_MS= POOLALLOC_DECAY_THREAD= POOLALLOC_REGION_SIZE= POOLALLOC_ON_ERROR= "
      "POOLALLOC_LEAKS= POOLALLOC_QUARANTINE= POOLALLOC_PROFILE= POOLALLOC_PROFILE_SAMPLE= "
      "POOLALLOC_PROFILE_PREFIX= POOLALLOC_PROFILE_SIGNAL= POOLALLOC_PROFILE_AT_EXIT= "
      "POOLALLOC_PROFILE_EVERY= POOLALLOC_PROFILE_PEAK= POOLALLOC_TAG_CSV= "
      "POOLALLOC_TAG_CSV_MS=";
  EXPECT_EQ(stderr_of(all, "ls /"), "");
  EXPECT_EQ(run_preloaded(all, "ls /", POOLALLOC_DEBUG_LIBRARY).err, "");
}

TEST(Options, InvalidValueIsReportedOnceAndTheDefaultKept) {
  const std::string report = stderr_of("POOLALLOC_MAX_POOLED=lots", "ls /");
  EXPECT_EQ(report,
            "poolalloc: ignoring POOLALLOC_MAX_POOLED=lots (expected a size from 0 to 32768); "
            "using 32768\n");
  EXPECT_NE(stderr_of("POOLALLOC_MAX_POOLED=40000", "ls /").find("ignoring"), std::string::npos);
  EXPECT_NE(stderr_of("POOLALLOC_STATS=yes", "ls /").find("expected 0 or 1"), std::string::npos);
}

// The bounds the message names are the bounds enforced, both inclusive, with every suffix.
TEST(Options, RegionSizeAcceptsExactlyEightMToSixtyFourT) {
  const std::string expected =
      " (expected a size from 8M to 64T, such as 16G); using 68719476736\n";
  for (const char* accepted : {"8M", "8388608", "8192K", "64T", "70368744177664", "65536G", "1t"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE=") + accepted, "ls /"), "") << accepted;
  for (const char* rejected : {"8388607", "70368744177665", "65T", "65537G", "7M", "16E", "T"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE=") + rejected, "ls /"),
              std::string("poolalloc: ignoring POOLALLOC_REGION_SIZE=") + rejected + expected)
        << rejected;
}

// tuning.md: a size is a decimal number with an optional K, M, G or T, in either case, and
// nothing else: no spaces, no fractions, no KiB or MB.
TEST(Options, SizesAreANumberAndOneSuffixInEitherCase) {
  for (const char* accepted : {"16g", "16G", "16384m", "16777216k", "17179869184"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE=") + accepted, "ls /"), "") << accepted;
  for (const char* rejected :
       {"16.5G", "16 G", " 16G", "16GiB", "16GB", "16Gb", "+16G", "0x1000000000"})
    EXPECT_EQ(stderr_of(std::string("POOLALLOC_REGION_SIZE='") + rejected + "'", "ls /"),
              std::string("poolalloc: ignoring POOLALLOC_REGION_SIZE=") + rejected +
                  " (expected a size from 8M to 64T, such as 16G); using 68719476736\n")
        << rejected;
}

// tuning.md: options are read once, at start-up, "a program that calls setenv changes nothing
// for itself; the programs it starts read their own environment when they start".
TEST(Options, ReadOnceAtStartUpSoASetenvChangesNothingForTheProgram) {
  ASSERT_EQ(setenv("POOLALLOC_MAX_POOLED", "0", 1), 0);
  void* block = malloc(64);
  bool pooled_in_a_new_thread = false;
  std::thread([&] {
    void* other = malloc(64);
    pooled_in_a_new_thread = poolalloc_owns(other) != 0;
    free(other);
  }).join();
  unsetenv("POOLALLOC_MAX_POOLED");
  EXPECT_NE(poolalloc_owns(block), 0);
  EXPECT_TRUE(pooled_in_a_new_thread);
  free(block);
  // A shell that exports a wrong value: only the program it then starts reports it.
  EXPECT_EQ(stderr_of("", "sh -c 'export POOLALLOC_MAX_POOLED=lots; ls / >/dev/null'"),
            "poolalloc: ignoring POOLALLOC_MAX_POOLED=lots (expected a size from 0 to 32768); "
            "using 32768\n");
}

// tuning.md: "A child of fork() keeps its parent's options (it does not read them again); a
// program started with exec reads them afresh, and reports a wrong variable again."
TEST(Options, AWrongValueIsReportedByEachProgramNotByItsForkedChildren) {
  const std::string line =
      "poolalloc: ignoring POOLALLOC_MAX_POOLED=lots (expected a size from 0 to 32768); "
      "using 32768\n";
  const ScratchDirectory scratch;
  const auto forked = run_preloaded("POOLALLOC_MAX_POOLED=lots",
                                    STATS_FD_HELPER " fork 3 " + scratch.path() + "/children");
  EXPECT_EQ(forked.status, 0);
  EXPECT_EQ(forked.err, line);
  // The shell and the two programs it runs: three images, three reports.
  EXPECT_EQ(stderr_of("POOLALLOC_MAX_POOLED=lots", "sh -c 'ls / && ls /'"), line + line + line);
}

// A gid that this process may give a file and that differs from its real gid, so that the
// file, made set-group-ID, runs secure; -1 when there is none (not root, no other group).
gid_t group_for_a_set_group_id_file() {
  if (geteuid() == 0) return getgid() == 65534 ? 65533 : 65534;
  gid_t groups[256];
  const int count = getgroups(256, groups);
  for (int i = 0; i < count; ++i)
    if (groups[i] != getgid()) return groups[i];
  return static_cast<gid_t>(-1);
}

// tuning.md: where the kernel marks the process secure (AT_SECURE: set-user-ID or set-group-ID
// programs), "the whole environment is ignored: every option keeps its default and nothing is
// reported". The same program, not set-group-ID, reads the same variables.
TEST(Options, SetGroupIdProgramsIgnoreTheEnvironment) {
  const std::string environment =
      "POOLALLOC_MAX_POOLED=0 POOLALLOC_STATS=1 POOLALLOC_VERBOSE=1 POOLALLOC_DECAY_MS=soon";
  const auto plain = run_preloaded(environment, SECURE_HELPER, "");
  EXPECT_EQ(plain.status, 0) << "not secure, and malloc(64) went to glibc";
  EXPECT_NE(plain.err.find("POOLALLOC_MAX_POOLED      0 B"), std::string::npos) << plain.err;

  const std::string copy = std::string(SECURE_HELPER) + "-set-group-id";
  unlink(copy.c_str());
  ASSERT_EQ(system(("cp " SECURE_HELPER " " + copy).c_str()), 0);
  const gid_t group = group_for_a_set_group_id_file();
  if (group == static_cast<gid_t>(-1) || chown(copy.c_str(), static_cast<uid_t>(-1), group) != 0 ||
      chmod(copy.c_str(), 02755) != 0) {
    unlink(copy.c_str());
    GTEST_SKIP() << "cannot make a set-group-ID program here";
  }
  const auto secure = run_preloaded(environment, copy, "");
  unlink(copy.c_str());
  if ((secure.status & 1) == 0) GTEST_SKIP() << "set-group-ID ignored (a nosuid mount?)";
  EXPECT_EQ(secure.status, 3) << "malloc(64) went to glibc: POOLALLOC_MAX_POOLED=0 was read";
  EXPECT_EQ(secure.err, "");
}

TEST(Options, MaxPooledSendsLargerRequestsToTheSystem) {
  const std::string table = stderr_of("POOLALLOC_STATS=1 POOLALLOC_MAX_POOLED=0", "ls /");
  EXPECT_NE(table.find("pooled requests: 0\n"), std::string::npos) << table;
}

// A typo is reported with the name it most likely meant, once per process: not again in the
// children the process forks (they inherit the options it read).
TEST(UnknownOptions, ATypoIsReportedOnceWithTheNameMeant) {
  const std::string expected =
      "poolalloc: unknown option POOLALLOC_STAT=1 ignored (did you mean POOLALLOC_STATS?)\n";
  EXPECT_EQ(stderr_of("POOLALLOC_STAT=1", "ls /"), expected);
  const ScratchDirectory scratch;
  const auto run =
      run_preloaded("POOLALLOC_STAT=1", STATS_FD_HELPER " fork 3 " + scratch.path() + "/children");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, expected);
  EXPECT_EQ(run_preloaded("POOLALLOC_STAT=1", "ls /", POOLALLOC_DEBUG_LIBRARY).err, expected);
}

// tuning.md's "likely misspelling": letter case, one or two typos (fewer than half the
// option's letters), or a name that begins like an option or with one (four letters or more);
// the nearest option is named.
TEST(UnknownOptions, ALikelyMisspellingIsReportedWithTheOptionMeant) {
  const std::pair<const char*, const char*> cases[] = {
      {"POOLALLOC_STATSFILE=x", "POOLALLOC_STATS_FILE"},
      {"POOLALLOC_stats=1", "POOLALLOC_STATS"},
      {"POOLALLOC_Decay_Ms=5", "POOLALLOC_DECAY_MS"},
      {"POOLALLOC_VERBOES=1", "POOLALLOC_VERBOSE"},
      {"POOLALLOC_STATZ=1", "POOLALLOC_STATS"},
      {"POOLALLOC_REGOIN_SIZ=1G", "POOLALLOC_REGION_SIZE"},
      {"POOLALLOC_DECAY=10", "POOLALLOC_DECAY_MS"},
      {"POOLALLOC_MAX_POOL=1K", "POOLALLOC_MAX_POOLED"},
      {"POOLALLOC_QUARANTINE_SIZE=1M", "POOLALLOC_QUARANTINE"},
      {"POOLALLOC_STATS_PATH=x", "POOLALLOC_STATS"},
      {"POOLALLOC_LEAK=1", "POOLALLOC_LEAKS"},
  };
  for (const auto& [variable, meant] : cases) {
    EXPECT_EQ(stderr_of(variable, "ls /"), std::string("poolalloc: unknown option ") + variable +
                                               " ignored (did you mean " + meant + "?)\n");
  }
}

// Silent by default outranks reporting: a POOLALLOC_* variable that is no likely misspelling is
// a program's or a script's own (POOLALLOC_LIB once made 5 of 21 CPython test modules fail,
// each reading its stderr), and neither build says anything of it.
TEST(UnknownOptions, OtherNamesAreLeftAlone) {
  const std::string others =
      "POOLALLOC_LIB=/opt/lib/libpoolalloc.so POOLALLOC_BUILD_DIR=/nonexistent "
      "POOLALLOC_HOME=/opt POOLALLOC_X=1 POOLALLOC_=x POOLALLOC_MAX=1 POOLALLOC_LOG=1 "
      "POOLALLOC_SOMETHING_ELSE=1 POOLALLOC_COLOUR=red POOLALLOC_" +
      std::string(1000, 'N') + "=1";
  EXPECT_EQ(stderr_of(others, "ls /"), "");
  EXPECT_EQ(run_preloaded(others, "ls /", POOLALLOC_DEBUG_LIBRARY).err, "");
}

// What a report shows of a variable is one line: cut after 80 bytes, control characters as '?'.
TEST(UnknownOptions, OddNamesAndValuesMakeOneLineEach) {
  EXPECT_EQ(stderr_of("POOLALLOC_LEAK=", "ls /"),
            "poolalloc: unknown option POOLALLOC_LEAK= ignored (did you mean POOLALLOC_LEAKS?)\n");
  const std::string long_value(100000, 'v');
  EXPECT_EQ(stderr_of("POOLALLOC_STAT=" + long_value, "ls /"),
            "poolalloc: unknown option POOLALLOC_STAT=" + long_value.substr(0, 80 - 15) +
                "... ignored (did you mean POOLALLOC_STATS?)\n");
  const std::string long_name = "POOLALLOC_STATS_" + std::string(100000, 'N');
  EXPECT_EQ(stderr_of(long_name + "=1", "ls /"),
            "poolalloc: unknown option " + long_name.substr(0, 80) +
                "... ignored (did you mean POOLALLOC_STATS?)\n");
  EXPECT_EQ(stderr_of("POOLALLOC_STAT=\"$(printf '\\033[31mred\\nline')\"", "ls /"),
            "poolalloc: unknown option POOLALLOC_STAT=?[31mred?line ignored (did you mean "
            "POOLALLOC_STATS?)\n");
  EXPECT_EQ(stderr_of("POOLALLOC_MAX_POOLED=\"$(printf 'x\\ny')\"", "ls /"),
            "poolalloc: ignoring POOLALLOC_MAX_POOLED=x?y (expected a size from 0 to 32768); "
            "using 32768\n");
}

// Thousands of variables: the other programs' are not looked at twice, and past eight
// misspellings a line counts the rest.
TEST(UnknownOptions, ThousandsOfVariables) {
  std::string others, own, misspelt;
  for (int i = 0; i < 3000; ++i) {
    others += " O" + std::to_string(i) + "=1";
    if (i % 3 == 0) own += " POOLALLOC_U" + std::to_string(i) + "=1";
    if (i % 3 == 0) misspelt += " POOLALLOC_STATS_" + std::to_string(i / 3) + "=1";
  }
  EXPECT_EQ(stderr_of(others + own + " POOLALLOC_STATS_FILE=", "ls /"), "");
  std::string expected;
  for (int i = 0; i < 8; ++i) {
    expected += "poolalloc: unknown option POOLALLOC_STATS_" + std::to_string(i) +
                "=1 ignored (did you mean POOLALLOC_STATS?)\n";
  }
  expected += "poolalloc: 992 more misspelt POOLALLOC_* options ignored\n";
  EXPECT_EQ(stderr_of(others + own + misspelt, "ls /"), expected);
}

// The heap profile's and the tags' CSV options at their defaults, as both builds list them.
constexpr const char* kProfileAndTagCsvDefaults =
    "  POOLALLOC_PROFILE         0 (default)\n"
    "  POOLALLOC_PROFILE_SAMPLE  512 KiB (default)\n"
    "  POOLALLOC_PROFILE_PREFIX  poolalloc (default)\n"
    "  POOLALLOC_PROFILE_SIGNAL  unset (default)\n"
    "  POOLALLOC_PROFILE_AT_EXIT 1 (default)\n"
    "  POOLALLOC_PROFILE_EVERY   0 B (default)\n"
    "  POOLALLOC_PROFILE_PEAK    0 B (default)\n"
    "  POOLALLOC_TAG_CSV         unset (default)\n"
    "  POOLALLOC_TAG_CSV_MS      1000 ms (default)\n";

TEST(Verbose, TheReleaseBuildListsTheVersionAndTheOptionsInForce) {
  const auto run = run_preloaded(
      "POOLALLOC_VERBOSE=1 POOLALLOC_MAX_POOLED=1152 POOLALLOC_REGION_SIZE=16G POOLALLOC_LEAKS=1",
      "ls /");
  EXPECT_EQ(without_pids(run.err),
            "poolalloc " POOLALLOC_VERSION_STRING
            ", release build, pid N, options in force:\n"
            "  POOLALLOC_STATS           0 (default)\n"
            "  POOLALLOC_STATS_FILE      unset (default)\n"
            "  POOLALLOC_VERBOSE         1\n"
            "  POOLALLOC_MAX_POOLED      1.125 KiB\n"
            "  POOLALLOC_DECAY_MS        1000 ms (default)\n"
            "  POOLALLOC_DECAY_THREAD    1 (default)\n"
            "  POOLALLOC_REGION_SIZE     16 GiB\n" +
                std::string(kProfileAndTagCsvDefaults) +
                "  POOLALLOC_LEAKS           1 (read by the debug build only)\n");
}

TEST(Verbose, TheDebugBuildListsItsOwnOptionsToo) {
  const ScratchDirectory scratch;
  const auto run = run_preloaded(
      "POOLALLOC_VERBOSE=1 POOLALLOC_STATS_FILE=stats-%p.txt POOLALLOC_QUARANTINE=1500 "
      "POOLALLOC_DECAY_MS=0 POOLALLOC_DECAY_THREAD=0",
      "ls /", POOLALLOC_DEBUG_LIBRARY, scratch.path());
  EXPECT_EQ(without_pids(run.err),
            "poolalloc " POOLALLOC_VERSION_STRING
            ", debug build, pid N, options in force:\n"
            "  POOLALLOC_STATS           1 (implied by POOLALLOC_STATS_FILE)\n"
            "  POOLALLOC_STATS_FILE      " +
                scratch.path() +
                "/stats-%p.txt\n"
                "  POOLALLOC_VERBOSE         1\n"
                "  POOLALLOC_MAX_POOLED      32 KiB (default)\n"
                "  POOLALLOC_DECAY_MS        0 ms\n"
                "  POOLALLOC_DECAY_THREAD    0\n"
                "  POOLALLOC_REGION_SIZE     64 GiB (default)\n" +
                std::string(kProfileAndTagCsvDefaults) +
                "  POOLALLOC_ON_ERROR        abort (default)\n"
                "  POOLALLOC_LEAKS           0 (default)\n"
                "  POOLALLOC_QUARANTINE      1500 B\n");
}

// tuning.md: "The block is printed by each process image: once per program, not again in
// forked children."
TEST(Verbose, PrintedByEachProgramNotByItsForkedChildren) {
  const auto blocks = [](const std::string& err) {
    std::size_t count = 0;
    for (std::size_t at = err.find(", release build, pid "); at != std::string::npos;
         at = err.find(", release build, pid ", at + 1))
      ++count;
    return count;
  };
  const ScratchDirectory scratch;
  const auto forked = run_preloaded("POOLALLOC_VERBOSE=1",
                                    STATS_FD_HELPER " fork 3 " + scratch.path() + "/children");
  EXPECT_EQ(forked.status, 0);
  EXPECT_EQ(blocks(forked.err), 1u) << forked.err;
  const std::string programs = stderr_of("POOLALLOC_VERBOSE=1", "sh -c 'ls / && ls /'");
  EXPECT_EQ(blocks(programs), 3u) << programs;
}

// The block comes after the reports of invalid values and unknown variables, in one write.
TEST(Verbose, ComesAfterTheReports) {
  const std::string err = without_pids(
      stderr_of("POOLALLOC_VERBOSE=1 POOLALLOC_DECAY_MS=soon POOLALLOC_STAT=1", "ls /"));
  EXPECT_EQ(err.rfind("poolalloc: ignoring POOLALLOC_DECAY_MS=soon", 0), 0u) << err;
  EXPECT_NE(err.find("\npoolalloc: unknown option POOLALLOC_STAT=1 ignored (did you mean "
                     "POOLALLOC_STATS?)\npoolalloc " POOLALLOC_VERSION_STRING ", release build"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("  POOLALLOC_DECAY_MS        1000 ms (default)\n"), std::string::npos) << err;
}

// Every output of the library finishes what it started, whichever thread writes it: a thread
// with a cancellation pending (write is a cancellation point) that loads the library writes
// the reports of its options and the verbose block whole, and is cancelled after the load.
TEST(OptionReports, AreWrittenWholeWithACancellationPending) {
  const auto run = run_preloaded("POOLALLOC_STAT=1 POOLALLOC_VERBOSE=1",
                                 STATS_FD_HELPER " dlopen-cancelled " POOLALLOC_LIBRARY, "");
  EXPECT_EQ(run.status, 0) << run.err;
  const std::string err = without_pids(run.err);
  EXPECT_EQ(err.rfind("poolalloc: unknown option POOLALLOC_STAT=1 ignored (did you mean "
                      "POOLALLOC_STATS?)\npoolalloc " POOLALLOC_VERSION_STRING ", release build",
                      0),
            0u)
      << err;
  EXPECT_TRUE(err.ends_with("  POOLALLOC_TAG_CSV_MS      1000 ms (default)\n")) << err;
}

// The table at exit is written whole by a thread that calls exit() with a cancellation pending.
TEST(StatsDestination, ExitFromAThreadWithACancellationPendingWritesTheWholeTable) {
  const auto run = run_preloaded("POOLALLOC_STATS=1", STATS_FD_HELPER " exit-cancelled");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("\nresident in RAM, of both: "), std::string::npos) << run.err;
}

// Runs the descriptor helper in `mode` with POOLALLOC_STATS=1, its stderr into a file, and
// returns its exit status; *data and *err receive the data file and what stderr got.
int run_helper(const std::string& mode, std::string* data, std::string* err) {
  char directory[] = "/tmp/poolalloc-stats-fd-XXXXXX";
  if (mkdtemp(directory) == nullptr) return -1;
  const std::string data_path = std::string(directory) + "/data";
  const std::string err_path = std::string(directory) + "/stderr";
  const std::string line =
      "POOLALLOC_STATS=1 LD_PRELOAD=" POOLALLOC_LIBRARY " " STATS_FD_HELPER " " + mode + " " +
      data_path + " 2>" + err_path + " 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-";
  const int status = std::system(line.c_str());
  *data = file_contents(data_path);
  *err = file_contents(err_path);
  unlink(data_path.c_str());
  unlink(err_path.c_str());
  rmdir(directory);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A daemon closes every inherited descriptor above 2, the library's copy of stderr among them,
// and opens its data file on the numbers that freed: the table goes to stderr, never into it.
TEST(StatsDestination, ADaemonsDataFileGetsNoTable) {
  std::string data, err;
  ASSERT_EQ(run_helper("daemon", &data, &err), 0);
  EXPECT_EQ(data, "payload\n");
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// The same with stderr closed too, and the data file opened on fd 2 itself: nothing refers to
// the stderr the program started with, so the table goes nowhere.
TEST(StatsDestination, NoTableWhenNoDescriptorIsStderrAnyMore) {
  std::string data, err;
  ASSERT_EQ(run_helper("daemon-all", &data, &err), 0);
  EXPECT_EQ(data, "payload\n");
  EXPECT_EQ(err, "");
}

// Programs and their tests see descriptor numbers: with the statistics on, the program's first
// open() still gets 3, as without the library (fds 3 to 9 are closed for the helper, in case
// the test runner leaks some).
TEST(StatsDestination, FirstOpenOfTheProgramGetsThree) {
  std::string data, err;
  ASSERT_EQ(run_helper("first-open", &data, &err), 0) << "the program's first open() was not fd 3";
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// coreutils and xz close fd 2 before they exit: the table goes to the copy taken at start-up.
TEST(StatsDestination, StderrClosedAtExitStillGetsTheTable) {
  std::string data, err;
  ASSERT_EQ(run_helper("close-stderr", &data, &err), 0);
  EXPECT_NE(err.find("pooled requests: "), std::string::npos) << err;
}

// stderr is a pipe whose reader has gone by the time the table is written: the program's exit
// status must be its own, not death by SIGPIPE.
TEST(StatsDestination, APipeWithoutReaderAtExitKillsNothing) {
  const std::string line =
      "bash -c 'POOLALLOC_STATS=1 LD_PRELOAD=" POOLALLOC_LIBRARY " " STATS_FD_HELPER
      " slow-exit 2>&1 >/dev/null | true; "
      "exit ${PIPESTATUS[0]}'";
  const int status = std::system(line.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "141 is death by SIGPIPE";
}

}  // namespace
