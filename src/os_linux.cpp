#include "os.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "platform.hpp"

namespace poolalloc::internal {
namespace {

constexpr int kNoReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

pthread_key_t g_thread_exit_key;

void* mapped_or_null(void* p) {
  return p == MAP_FAILED ? nullptr : p;
}

long futex(std::atomic<int>& word, int op, int value, const timespec* timeout = nullptr) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
  return syscall(SYS_futex, reinterpret_cast<int*>(&word), op | FUTEX_PRIVATE_FLAG, value, timeout,
                 nullptr, 0);
}

}  // namespace

void* os_map(std::size_t bytes) {
  return mapped_or_null(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

bool os_reserve(std::uintptr_t, std::size_t) {
  return true;
}

void os_unreserve(std::uintptr_t, std::size_t) {}

void* os_map_noreserve_at(std::uintptr_t address, std::size_t bytes) {
  void* const wanted = reinterpret_cast<void*>(address);
  void* p =
      mmap(wanted, bytes, PROT_READ | PROT_WRITE, kNoReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (p != wanted) {  // a kernel older than 4.17 takes MAP_FIXED_NOREPLACE for a mere hint
    munmap(p, bytes);
    errno = EEXIST;
    return nullptr;
  }
  return p;
}

void* os_map_noreserve(std::size_t bytes) {
  return mapped_or_null(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kNoReserveFlags, -1, 0));
}

const void* os_map_file(int fd, std::size_t bytes) {
  return mapped_or_null(mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0));
}

void os_unmap(void* start, std::size_t bytes) {
  munmap(start, bytes);
}

void* os_remap(void* start, std::size_t old_bytes, std::size_t new_bytes) {
  return mapped_or_null(mremap(start, old_bytes, new_bytes, MREMAP_MAYMOVE));
}

// A page at a time: the kernel promises no partial copy within one iovec element.
std::size_t os_copy_own_memory(void* to, const void* from, std::size_t bytes) {
  const pid_t self = getpid();
  std::size_t done = 0;
  while (done < bytes) {
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(from) + done;
    const std::size_t page_left = kPageSize - address % kPageSize;
    const std::size_t chunk = bytes - done < page_left ? bytes - done : page_left;
    const iovec local{static_cast<char*>(to) + done, chunk};
    const iovec remote{reinterpret_cast<void*>(address), chunk};
    const ssize_t copied = process_vm_readv(self, &local, 1, &remote, 1, 0);
    if (copied < 0 && (errno == EPERM || errno == ENOSYS)) {
      std::memcpy(static_cast<char*>(to) + done, reinterpret_cast<const void*>(address),
                  bytes - done);
      return bytes;
    }
    if (copied <= 0) return done;
    done += static_cast<std::size_t>(copied);
  }
  return done;
}

std::uintptr_t os_program_break() {
  return reinterpret_cast<std::uintptr_t>(sbrk(0));
}

void os_decommit(void* start, std::size_t bytes) {
  madvise(start, bytes, MADV_DONTNEED);
}

std::size_t os_resident_bytes(const void* start, std::size_t bytes) {
  constexpr std::size_t kChunkPages = 256;
  unsigned char pages[kChunkPages];
  std::size_t resident = 0;
  auto address = reinterpret_cast<std::uintptr_t>(start);
  for (std::size_t done = 0; done < bytes; done += kChunkPages * kPageSize) {
    const std::size_t chunk =
        bytes - done < kChunkPages * kPageSize ? bytes - done : kChunkPages * kPageSize;
    if (mincore(reinterpret_cast<void*>(address + done), chunk, pages) != 0) return resident;
    for (std::size_t i = 0; i < (chunk + kPageSize - 1) / kPageSize; ++i)
      resident += (pages[i] & 1) * kPageSize;
  }
  return resident;
}

void os_futex_wait(std::atomic<int>& word, int expected) {
  futex(word, FUTEX_WAIT, expected);
}

void os_futex_wait_ms(std::atomic<int>& word, int expected, std::uint64_t ms) {
  const timespec timeout{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000};
  futex(word, FUTEX_WAIT, expected, &timeout);
}

void os_futex_wake(std::atomic<int>& word, int waiters) {
  futex(word, FUTEX_WAKE, waiters);
}

std::uint64_t os_clock_ms() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000 +
         static_cast<std::uint64_t>(now.tv_nsec) / 1000000;
}

std::int64_t os_wall_clock_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

void os_sleep_ms(std::uint64_t ms) {
  const timespec pause{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000};
  nanosleep(&pause, nullptr);
}

void os_yield() {
  sched_yield();
}

bool os_membarrier_register() {
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

bool os_membarrier() {
  return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

int os_process_id() {
  return static_cast<int>(getpid());
}

int os_thread_id() {
  return static_cast<int>(gettid());
}

int os_thread_count() {
  struct stat task {};
  if (stat("/proc/self/task", &task) != 0 || task.st_nlink < 3) return 0;
  return static_cast<int>(task.st_nlink - 2);
}

bool os_on_thread_exit(void (*callback)(void*)) {
  return pthread_key_create(&g_thread_exit_key, callback) == 0;
}

void os_set_thread_exit_value(void* value) {
  pthread_setspecific(g_thread_exit_key, value);
}

// A key's destructor runs at its thread's exit only.
bool os_thread_exit_is_running(const void*) {
  return true;
}

bool os_thread_exited(int pid, int tid) {
  return syscall(SYS_tgkill, pid, tid, 0) != 0 && errno == ESRCH;
}

// The system call: glibc's getcwd() falls back to code that allocates (an unreachable or very
// long working directory). The kernel names an unreachable one "(unreachable)...".
bool os_working_directory(char* path, std::size_t capacity) {
  return syscall(SYS_getcwd, path, capacity) > 0 && path[0] == '/';
}

std::uint64_t os_random_bits() {
  std::uint64_t bits = 0;
  // The system call, not glibc's getrandom(), which is a cancellation point: a thread with a
  // cancellation pending that loads the library (dlopen) would be cancelled in the middle of its
  // initialisation, with the loader's lock held and every other thread waiting for it to end.
  if (syscall(SYS_getrandom, &bits, sizeof bits, GRND_NONBLOCK) == static_cast<long>(sizeof bits))
    return bits;
  // No entropy yet (early boot): the 16 random bytes the kernel gave the process, which also
  // seed glibc's stack and pointer guards, through a one-way combination with the clock and the
  // stack's randomised address, so that bits read back (a free-block key) do not give them away.
  std::uint64_t random[2] = {};
  if (const auto at_random = getauxval(AT_RANDOM); at_random != 0)
    std::memcpy(random, reinterpret_cast<const void*>(at_random), sizeof random);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const std::uint64_t clock = static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
                              static_cast<std::uint64_t>(now.tv_nsec);
  return mix_bits(random[0] ^ clock) ^ mix_bits(random[1] + reinterpret_cast<std::uintptr_t>(&now));
}

}  // namespace poolalloc::internal
