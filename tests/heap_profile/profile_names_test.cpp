// The names that `go tool pprof` gives to the sites of a program with functions where pprof
// names nothing from DWARF (names_probe.cpp): the profile names them itself, from the symbol
// tables of the program and of its libraries.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "profile_test_util.hpp"

namespace {

using profile_test::figure_of;
using profile_test::go_installed;
using profile_test::pprof_top;
using profile_test::run_in;
using profile_test::ScratchDirectory;

const std::string kProbe = NAMES_PROBE;
constexpr double kMiB = 1 << 20;

class ProfileNames : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!go_installed()) return;
    directory_ = new ScratchDirectory;
    ASSERT_EQ(run_in(directory_->path(), "", kProbe), 0);
    std::string text;
    flat_ = pprof_top(kProbe, directory_->path() + "/call.pb", "inuse_space", &text);
    std::cout << text;
  }
  static void TearDownTestSuite() {
    delete directory_;
    directory_ = nullptr;
  }
  void SetUp() override {
    if (!go_installed()) GTEST_SKIP() << "go (golang-go) is not installed";
  }
  // The live bytes of the function whose name pprof shows as `name`: 16 MiB in 64-byte blocks,
  // so 4 standard deviations (2.9 MiB each) either side of them.
  static void expect_named(const std::string& name) {
    const double live = figure_of(flat_, name);
    EXPECT_GT(live, 4.4 * kMiB) << name;
    EXPECT_LT(live, 27.6 * kMiB) << name;
  }

  static ScratchDirectory* directory_;
  static std::map<std::string, double> flat_;
};

ScratchDirectory* ProfileNames::directory_ = nullptr;
std::map<std::string, double> ProfileNames::flat_;

TEST_F(ProfileNames, NamesAFunctionOfAFileWhoseLineTableIsNotInAddressOrder) {
  expect_named("probe_unit_site");
}

TEST_F(ProfileNames, NamesFunctionsOfNamespacesAndClasses) {
  expect_named("probe_names::namespace_site");
  expect_named("(anonymous namespace)::anonymous_site");
  expect_named("ProbeClass::member_site");
}

TEST_F(ProfileNames, NamesAnExportedFunctionOfAStrippedSharedLibrary) {
  expect_named("probe_library_site");
}

}  // namespace
