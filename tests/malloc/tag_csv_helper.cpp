// Run by tag_csv_test with POOLALLOC_TAG_CSV set: allocates under two tags, then idles (no call
// into the allocator: open, read and nanosleep only) until the CSV holds `lines` lines, and
// exits 0; 1 when they have not come within 20 seconds. A "%p" in the path stands for the process
// id, as in POOLALLOC_TAG_CSV.
//   tag_csv_helper CSV_PATH LINES
// The same, but first closing descriptors 3 to 63 and opening OWN_FILE on each of them, as a
// daemon does that closes what it did not open and opens files of its own; exits 3 as soon as
// OWN_FILE gets a byte:
//   tag_csv_helper CSV_PATH LINES closes-descriptors OWN_FILE
// The same, but registering tags until no id is left, each named with 63 bytes, nearly all
// quotes, so that the header is nearly as long as a header gets; once the lines have come, exits 4
// unless the process made one write(2) for each line with its figures (/proc/self/io's syscw: a
// header and the line under it are one write):
//   tag_csv_helper CSV_PATH LINES every-tag
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "poolalloc/poolalloc.h"

namespace {

// The lines of the file, and of them those of figures (not a header, which starts with "ms,").
struct Lines {
  int all = 0;
  int figures = 0;
};

Lines lines_in(const char* path) {
  Lines lines;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  char buffer[4096];
  bool line_start = true;
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    for (ssize_t i = 0; i < n; ++i) {
      if (line_start && buffer[i] >= '0' && buffer[i] <= '9') ++lines.figures;
      line_start = buffer[i] == '\n';
      lines.all += line_start;
    }
  }
  close(fd);
  return lines;
}

// The write(2) calls this process made, all its threads together; -1 where /proc says nothing.
long writes_made() {
  const int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[512];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* syscw = strstr(text, "syscw: ");
  return syscw != nullptr ? atol(syscw + strlen("syscw: ")) : -1;
}

void close_descriptors_and_open(const char* own_file) {
  for (int fd = 3; fd <= 63; ++fd) close(fd);
  for (int fd = 3; fd <= 63; ++fd) open(own_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
}

bool has_bytes(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  char byte;
  const bool any = fd >= 0 && read(fd, &byte, 1) == 1;
  if (fd >= 0) close(fd);
  return any;
}

void register_every_tag() {
  for (int i = 0; i < 255; ++i) {
    char name[64];
    memset(name, '"', 63);
    snprintf(name, 4, "%03d", i);
    name[3] = '"';
    name[63] = '\0';
    if (poolalloc_tag_register(name) == -1) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int lines = atoi(argv[2]);
  const char* own_file = argc == 5 && strcmp(argv[3], "closes-descriptors") == 0 ? argv[4] : "";
  const bool every_tag = argc == 4 && strcmp(argv[3], "every-tag") == 0;
  if (argc != 3 && own_file[0] == '\0' && !every_tag) return 2;
  if (own_file[0] != '\0') close_descriptors_and_open(own_file);
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
  if (every_tag) register_every_tag();
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
    if (own_file[0] != '\0' && has_bytes(own_file)) return 3;
    if (lines_in(path).all >= lines) {
      if (!every_tag) return 0;
      nanosleep(&pause, nullptr);  // the write that the line came by has returned
      return writes_made() == lines_in(path).figures ? 0 : 4;
    }
    nanosleep(&pause, nullptr);
  }
  return 1;
}
