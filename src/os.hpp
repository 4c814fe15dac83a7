// The OS layer: the allocator calls mmap, mremap, munmap, madvise, mincore, process_vm_readv, the
// futex, membarrier, the CPU's spin pause and the other system calls below here and nowhere else
// in src/. (Files are opened, read and written where the reports, the options and the profile
// need them.) os_linux.cpp implements it with Linux's system calls, os_windows.cpp with Win32's
// (VirtualAlloc, WaitOnAddress, fiber-local storage, FlushProcessWriteBuffers); the calls that
// only the Linux-only parts use (the heap profile, the large-block cache, the decay thread) are
// marked so and have no Windows definition.
//
// One error convention: a call that can fail returns nullptr or false (a byte count: what it
// counted before the failure) and leaves the reason in errno; a call whose failure leaves the
// caller nothing to do returns nothing. None prints, aborts or allocates, and none restores
// errno: a caller that must keep it (free() does) saves it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#if !defined(__GNUC__)
#include <immintrin.h>
#endif

namespace poolalloc::internal {

inline constexpr std::size_t kPageSize = 4096;

// Memory.

// Maps `bytes` of zero-filled read-write memory, for metadata.
void* os_map(std::size_t bytes);

// The address space of the region's window, [address, address + bytes), before its first
// os_map_noreserve_at: false if any part of it is taken. Linux sets nothing aside (a
// reservation would count against RLIMIT_AS, and the maps below fail where the range is taken);
// Windows reserves it (VirtualAlloc's MEM_RESERVE), as its pages can only be committed inside a
// reservation. os_unreserve gives the window back (after os_unmap of what was mapped in it).
bool os_reserve(std::uintptr_t address, std::size_t bytes);
void os_unreserve(std::uintptr_t address, std::size_t bytes);

// The region's mappings (MAP_NORESERVE: no swap is set aside; on Windows, pages committed in the
// window os_reserve set aside). The first maps exactly at `address`, never over an existing
// mapping: nullptr if the range is taken (EEXIST) or the address space is exhausted (ENOMEM, also
// under RLIMIT_AS); the second where the kernel chooses.
void* os_map_noreserve_at(std::uintptr_t address, std::size_t bytes);
void* os_map_noreserve(std::size_t bytes);

// Maps `bytes` of the open file `fd` from its start, read-only and private. Linux only.
const void* os_map_file(int fd, std::size_t bytes);

// Unmaps a whole mapping of os_map, os_map_noreserve or os_map_file, or a part of the region's
// window mapped by os_map_noreserve_at.
void os_unmap(void* start, std::size_t bytes);

// Grows or shrinks a mapping of os_map to `new_bytes`, moving it where it must (mremap): its
// contents are kept, pages added read as zeros. nullptr if no room is to be had (the old mapping
// then stays as it was).
void* os_remap(void* start, std::size_t old_bytes, std::size_t new_bytes);

// Copies up to `bytes` from `from`, an address of this process, into `to`, by the kernel
// (process_vm_readv): a page that is not mapped, or a page of a file beyond the file's end, ends
// the copy where a load would raise SIGSEGV or SIGBUS. Returns the bytes copied, 0 when the first
// page could not be read. Where the call is refused (a seccomp filter that does not list it, as
// some containers have), it copies with loads: the memory must then stay mapped. Linux only.
std::size_t os_copy_own_memory(void* to, const void* from, std::size_t bytes);

// Gives the pages of [start, start + bytes) back to the OS; they read as zeros afterwards.
void os_decommit(void* start, std::size_t bytes);

// Bytes of [start, start + bytes) resident in memory.
std::size_t os_resident_bytes(const void* start, std::size_t bytes);

// The program break (sbrk(0)): where glibc's main heap ends. A read of libc's copy, no system
// call. Linux only.
std::uintptr_t os_program_break();

// Threads.

// Sleeps while `word` holds `expected` (returns at once if it does not), until a wake, or a
// signal; the caller reads the word again either way. Private to this process.
void os_futex_wait(std::atomic<int>& word, int expected);
// The same, for `ms` milliseconds at most.
void os_futex_wait_ms(std::atomic<int>& word, int expected, std::uint64_t ms);
// Wakes up to `waiters` threads sleeping on `word`.
void os_futex_wake(std::atomic<int>& word, int waiters);

// Time.

// Milliseconds of CLOCK_MONOTONIC_COARSE: read from the vDSO, no system call, a few
// nanoseconds, at the resolution of the kernel's tick (GetTickCount64 on Windows: a read of the
// shared user page, at the timer's resolution, 15.6 ms by default).
std::uint64_t os_clock_ms();
// Nanoseconds since the Unix epoch (CLOCK_REALTIME, from the vDSO): a date to stamp a file with.
std::int64_t os_wall_clock_ns();
// Sleeps for `ms` milliseconds (less if a signal interrupts it).
void os_sleep_ms(std::uint64_t ms);

// In a spin loop: lets the other hyperthread of the core run while this one waits.
inline void os_spin_pause() {
#if defined(__GNUC__)
  __builtin_ia32_pause();
#else
  _mm_pause();
#endif
}

// Gives the CPU to another thread that is ready to run.
void os_yield();

// membarrier(2). Registers this process for os_membarrier(), which puts a full memory barrier
// in every running thread of the process, as if each had executed one where it stands (a thread
// that is not running passes one when it is next scheduled). False where the kernel has no
// membarrier, or the process is not registered (a child of fork() must register again). Windows:
// FlushProcessWriteBuffers, which makes the same promise; no registration.
bool os_membarrier_register();
bool os_membarrier();

int os_process_id();
int os_thread_id();

// How many threads this process has: the link count of /proc/self/task, two more than its
// threads (a stat: no descriptor is opened, so none can show in the program's table); 0 where
// /proc is not mounted or cannot be read (a sandbox). Linux only (the decay thread's).
int os_thread_count();

// Whether thread `tid` of process `pid` has exited: tgkill with signal 0 fails with ESRCH only
// once the task has exited. Windows: the thread's object is signalled, or no thread has the id
// (a thread ended by TerminateThread, which runs no exit callback, is found so).
bool os_thread_exited(int pid, int tid);

// Thread exit. os_on_thread_exit registers, once, the callback that each thread's exit calls
// with the value that thread set last with os_set_thread_exit_value (none for a thread that set
// none, or null): a pthread key's destructor on Linux; on Windows a fiber-local storage slot's
// callback, which every thread's exit runs (ExitThread, a return from the thread's function,
// _endthreadex, a thread of CreateThread that never called into the C++ runtime) but
// TerminateThread's, and which DeleteFiber runs too, on the thread that deletes the fiber (the
// callback checks whose value it is given, os_thread_exit_is_running). False when no key or slot
// could be had. On Windows the slot is freed at the module's exit (a DLL's unload): from then on
// no callback runs.
bool os_on_thread_exit(void (*callback)(void*));
void os_set_thread_exit_value(void* value);
// Inside the callback: whether it runs for the calling thread's exit. Always on Linux; on Windows
// when `value` is the running fiber's, not when DeleteFiber of another fiber drops it (the thread
// that deletes it, its owner or not, lives on).
bool os_thread_exit_is_running(const void* value);

// The working directory into path[0, capacity), terminated; false if it has none, lies outside
// this process's root or does not fit.
bool os_working_directory(char* path, std::size_t capacity);

// Randomness.

// Random bits (getrandom, else the kernel's AT_RANDOM bytes mixed with the clock), without
// allocating: for placing the region and for the free-block key.
std::uint64_t os_random_bits();

// splitmix64's finaliser: spreads every bit of x over the result.
constexpr std::uint64_t mix_bits(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

}  // namespace poolalloc::internal
