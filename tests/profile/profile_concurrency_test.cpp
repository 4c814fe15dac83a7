// The profile writer while other threads map and unmap an ELF file (as dlopen and dlclose do):
// each image it reads a build ID from may be gone by the time it reads it, which must end that
// read, never the process.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "os.hpp"
#include "profile_format.hpp"

namespace {

using namespace poolalloc::internal;

bool no_samples(void*, ProfileSample*) {
  return false;
}

TEST(ProfileConcurrency, AnImageUnmappedWhileItsBuildIdIsReadEndsOnlyThatRead) {
  // The program's own file: an ELF image with a build ID, its first page mapped where the writer
  // looks for the headers and its second as code, as the loader maps a library.
  const int image = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(image, 0);
  std::atomic<bool> stop{false};
  std::atomic<long> cycles{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        auto* area = static_cast<char*>(
            mmap(nullptr, 2 * kPageSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (area == MAP_FAILED) continue;
        mmap(area, kPageSize, PROT_READ, MAP_PRIVATE | MAP_FIXED, image, 0);
        mmap(area + kPageSize, kPageSize, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, image,
             kPageSize);
        munmap(area, 2 * kPageSize);
        cycles.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(null, 0);
  int written = 0;
  for (int i = 0; i < 2000; ++i) written += write_profile(null, 0, no_samples, nullptr) ? 1 : 0;
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  close(null);
  close(image);
  EXPECT_EQ(written, 2000);
  EXPECT_GT(cycles.load(), 0) << "the images were never mapped while the profiles were written";
}

}  // namespace
