// os_copy_own_memory: the kernel's copy of this process's memory, which ends at a page that a
// load would fault on instead of raising a signal.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "os.hpp"

namespace {

using poolalloc::internal::kPageSize;
using poolalloc::internal::os_copy_own_memory;

TEST(OwnMemoryCopy, CopiesMappedMemoryAcrossPages) {
  std::vector<unsigned char> from(3 * kPageSize + 100);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 7);
  std::vector<unsigned char> to(from.size());
  EXPECT_EQ(os_copy_own_memory(to.data(), from.data() + 1, from.size() - 1), from.size() - 1);
  EXPECT_EQ(std::memcmp(to.data(), from.data() + 1, from.size() - 1), 0);
}

TEST(OwnMemoryCopy, StopsAtThePageThatIsNotMapped) {
  auto* pages = static_cast<unsigned char*>(
      mmap(nullptr, 2 * kPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  std::memset(pages, 0x5a, kPageSize);
  ASSERT_EQ(munmap(pages + kPageSize, kPageSize), 0);
  std::vector<unsigned char> to(2 * kPageSize);
  EXPECT_EQ(os_copy_own_memory(to.data(), pages + 16, 2 * kPageSize - 16), kPageSize - 16);
  EXPECT_EQ(to[kPageSize - 17], 0x5a);
  EXPECT_EQ(os_copy_own_memory(to.data(), pages + kPageSize, 16), 0u);
  munmap(pages, kPageSize);
}

TEST(OwnMemoryCopy, StopsAtAFilesPageBeyondTheFilesEnd) {
  char name[] = "/tmp/own_memory_copy_test_XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  unlink(name);
  ASSERT_EQ(ftruncate(fd, 100), 0);  // one page of the file, the second raises SIGBUS
  void* mapped = mmap(nullptr, 2 * kPageSize, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(mapped, MAP_FAILED);
  std::vector<unsigned char> to(2 * kPageSize);
  EXPECT_EQ(os_copy_own_memory(to.data(), mapped, 2 * kPageSize), kPageSize);
  munmap(mapped, 2 * kPageSize);
}

}  // namespace
