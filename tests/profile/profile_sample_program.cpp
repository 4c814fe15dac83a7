// The program whose heap profile profile_pprof_test reads with go tool pprof. It records the
// stacks of three call sites with libunwind, as the sampler does: two functions of its own and
// one of a shared library (profile_sample_sites.cpp), then writes them with write_profile from a
// signal handler that runs on a small alternate stack, while every allocation function aborts
// the process: the writer must call none.
//
//   profile_sample_program PROFILE   writes PROFILE, exits 0 when write_profile says it wrote it
//   profile_sample_program --trap    calls malloc with the trap set: must die of SIGABRT
#include <fcntl.h>
#include <libunwind.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "profile_format.hpp"

using poolalloc::internal::ProfileSample;

// The allocation trap: glibc's functions behind the program's own, which abort while it is set.
// glibc calls them too (through its PLT), so an allocation inside the C library is caught as well.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* block, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* block);
}

namespace {

// Set and read by the one thread, in its signal handler too. (No std::atomic: its member
// functions, inline in a header, would put sequences before the program's own in the line table
// of this file's DWARF, which go tool pprof's reader of it, Go's debug/dwarf, cannot search:
// LineReader.SeekPC takes the table to be in address order.)
volatile sig_atomic_t g_trap_allocations = 0;

void refuse_while_trapped(const char* function) {
  if (g_trap_allocations == 0) return;
  const char text[] = "profile_sample_program: allocation while the profile was written: ";
  (void)!write(STDERR_FILENO, text, sizeof text - 1);
  (void)!write(STDERR_FILENO, function, std::strlen(function));
  (void)!write(STDERR_FILENO, "\n", 1);
  std::abort();
}

}  // namespace

extern "C" {
void* malloc(std::size_t size) {
  refuse_while_trapped("malloc");
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  refuse_while_trapped("calloc");
  return __libc_calloc(count, size);
}
void* realloc(void* block, std::size_t size) {
  refuse_while_trapped("realloc");
  return __libc_realloc(block, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  refuse_while_trapped("memalign");
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  refuse_while_trapped("aligned_alloc");
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** block, std::size_t alignment, std::size_t size) {
  refuse_while_trapped("posix_memalign");
  *block = __libc_memalign(alignment, size);
  return *block != nullptr ? 0 : ENOMEM;
}
void free(void* block) {
  refuse_while_trapped("free");
  __libc_free(block);
}
int profile_site_in_library(void** frames, int capacity);
}

namespace {

constexpr int kMaxDepth = 64;

struct Stack {
  void* frames[kMaxDepth];
  int depth;
};

// Twice from one call site: two samples with the same stack, which pprof adds up.
Stack g_render[2];
Stack g_textures;
Stack g_library;

}  // namespace

// The names that pprof must find: outside the anonymous namespace, so that they read as written.
__attribute__((noinline)) void profile_site_render_meshes(Stack& stack) {
  stack.depth = unw_backtrace(stack.frames, kMaxDepth);
}

__attribute__((noinline)) void profile_site_load_textures(Stack& stack) {
  stack.depth = unw_backtrace(stack.frames, kMaxDepth);
}

namespace {

ProfileSample sample_of(const Stack& stack, std::int64_t alloc_objects, std::int64_t alloc_space,
                        std::int64_t inuse_objects, std::int64_t inuse_space, const char* tag) {
  return {stack.frames,
          static_cast<std::uint32_t>(stack.depth),
          alloc_objects,
          alloc_space,
          inuse_objects,
          inuse_space,
          tag};
}

// The samples, with the values that profile_pprof_test expects (main sets them).
ProfileSample g_samples[4];
std::size_t g_next_sample = 0;

bool next_sample(void*, ProfileSample* out) {
  if (g_next_sample == sizeof g_samples / sizeof g_samples[0]) return false;
  *out = g_samples[g_next_sample++];
  return true;
}

int g_profile_fd = -1;
volatile sig_atomic_t g_written = 0;

void write_profile_on_signal(int) {
  g_trap_allocations = 1;
  g_written = poolalloc::internal::write_profile(g_profile_fd, 524288, next_sample, nullptr);
  g_trap_allocations = 0;
}

// The signal handler's stack: 16 KiB, a fraction of a thread's, where the writer must fit.
alignas(16) char g_signal_stack[16384];

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (std::strcmp(argv[1], "--trap") == 0) {
    g_trap_allocations = 1;
    void* volatile block = malloc(16);
    static_cast<void>(block);
    return 1;  // not reached: the trap aborts
  }
  for (Stack& stack : g_render) profile_site_render_meshes(stack);
  profile_site_load_textures(g_textures);
  g_library.depth = profile_site_in_library(g_library.frames, kMaxDepth);
  g_samples[0] = sample_of(g_render[0], 7, 700000, 5, 500000, "render");
  g_samples[1] = sample_of(g_render[1], 7, 700000, 5, 500000, "render");
  g_samples[2] = sample_of(g_textures, 11, 1100000, 3, 300000, "textures");
  g_samples[3] = sample_of(g_library, 13, 1300000, 13, 1300000, nullptr);

  g_profile_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (g_profile_fd < 0) return 3;
  const stack_t alternate{g_signal_stack, 0, sizeof g_signal_stack};
  struct sigaction action {};
  action.sa_handler = write_profile_on_signal;
  action.sa_flags = SA_ONSTACK;
  if (sigaltstack(&alternate, nullptr) != 0 || sigaction(SIGUSR1, &action, nullptr) != 0) return 4;
  raise(SIGUSR1);
  close(g_profile_fd);
  return g_written ? 0 : 5;
}
