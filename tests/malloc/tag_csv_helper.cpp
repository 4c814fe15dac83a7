// Run by tag_csv_test with POOLALLOC_TAG_CSV set: allocates under two tags, then idles (no call
// into the allocator: open, read and nanosleep only) until the CSV holds `lines` lines, and
// exits 0; 1 when they have not come within 20 seconds. A "%p" in the path stands for the process
// id, as in POOLALLOC_TAG_CSV.
//   tag_csv_helper CSV_PATH LINES
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "poolalloc/poolalloc.h"

namespace {

int lines_in(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int lines = 0;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
    for (ssize_t i = 0; i < n; ++i) lines += buffer[i] == '\n';
  close(fd);
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int lines = atoi(argv[2]);
  char path[4096];
  const char* pid = strstr(argv[1], "%p");
  if (pid == nullptr) {
    snprintf(path, sizeof path, "%s", argv[1]);
  } else {
    snprintf(path, sizeof path, "%.*s%d%s", static_cast<int>(pid - argv[1]), argv[1],
             static_cast<int>(getpid()), pid + 2);
  }
  const int ai = poolalloc_tag_register("AI");
  const int render = poolalloc_tag_register("Render, 2D \"HUD\"");
  poolalloc_tag_push(ai);
  for (int i = 0; i < 16; ++i) {
    void* block = malloc(4096);  // 64 KiB in all, kept to the end
    asm volatile("" : : "g"(block) : "memory");
  }
  poolalloc_tag_pop();
  poolalloc_tag_push(render);
  void* large = malloc(1 << 20);
  asm volatile("" : : "g"(large) : "memory");
  poolalloc_tag_pop();
  const timespec pause{0, 10 * 1000 * 1000};
  for (int polls = 0; polls < 2000; ++polls) {
    if (lines_in(path) >= lines) return 0;
    nanosleep(&pause, nullptr);
  }
  return 1;
}
