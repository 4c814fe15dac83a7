// What FixedPool and Pool<T> with debug checks say of what is still live when they are destroyed.
#include <poolalloc/fixed_pool.hpp>
#include <poolalloc/object_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace {

using poolalloc::DebugChecks;
using poolalloc::FixedPool;
using poolalloc::Growth;
using poolalloc::LeakReport;
using poolalloc::Pool;

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The report of a pool of each kind destroyed with 20 live blocks or objects.
std::string fixed_pool_report(LeakReport report, bool set) {
  testing::internal::CaptureStderr();
  {
    FixedPool pool(32, 64, 16, Growth::fixed, DebugChecks::on);
    if (set) pool.set_leak_report(report);
    for (int i = 0; i < 20; ++i) (void)pool.allocate();
  }
  return testing::internal::GetCapturedStderr();
}

std::string object_pool_report(LeakReport report, bool set) {
  testing::internal::CaptureStderr();
  {
    Pool<int> pool(64, Growth::fixed, DebugChecks::on);
    if (set) pool.set_leak_report(report);
    for (int i = 0; i < 20; ++i) (void)pool.spawn(i);
  }
  return testing::internal::GetCapturedStderr();
}

TEST(LeakReport, ByDefaultListsTheFirstEightAndCountsAll) {
  const std::string blocks = fixed_pool_report(LeakReport::summary, false);
  EXPECT_EQ(lines(blocks), 9u) << blocks;
  EXPECT_NE(blocks.find("20 blocks still allocated at destroy() (the first 8 listed)\n"),
            std::string::npos)
      << blocks;
  const std::string objects = object_pool_report(LeakReport::summary, false);
  EXPECT_EQ(lines(objects), 9u) << objects;
  EXPECT_NE(objects.find("20 objects still alive when the pool was destroyed (the first 8 "
                         "listed)\n"),
            std::string::npos)
      << objects;
}

TEST(LeakReport, PerObjectListsEveryOne) {
  const std::string blocks = fixed_pool_report(LeakReport::per_object, true);
  EXPECT_EQ(lines(blocks), 21u) << blocks;
  EXPECT_NE(blocks.find(": 20 blocks still allocated at destroy()\n"), std::string::npos);
  const std::string objects = object_pool_report(LeakReport::per_object, true);
  EXPECT_EQ(lines(objects), 21u) << objects;
  EXPECT_NE(objects.find(": 20 objects still alive when the pool was destroyed\n"),
            std::string::npos);
}

TEST(LeakReport, OffSaysNothing) {
  EXPECT_EQ(fixed_pool_report(LeakReport::off, true), "");
  EXPECT_EQ(object_pool_report(LeakReport::off, true), "");
}

TEST(LeakReport, IsKeptByAPoolCreatedAgain) {
  FixedPool pool;
  pool.set_leak_report(LeakReport::off);
  ASSERT_TRUE(pool.create(32, 4, 16, Growth::fixed, DebugChecks::on));
  (void)pool.allocate();
  EXPECT_EQ(pool.leak_report(), LeakReport::off);
  testing::internal::CaptureStderr();
  pool.destroy();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
