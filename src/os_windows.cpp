// The OS layer on Windows (os.hpp): Win32's calls in place of Linux's. Memory is reserved and
// committed with VirtualAlloc; waits are WaitOnAddress's; a thread's exit reaches the allocator
// through a fiber-local storage slot's callback; the barrier in every thread is
// FlushProcessWriteBuffers. errno carries the reason of a failure, as on Linux.
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00  // Windows 10: WaitOnAddress, GetSystemTimePreciseAsFileTime
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
// After windows.h, which they need.
#include <ntsecapi.h>  // RtlGenRandom
#include <psapi.h>     // QueryWorkingSetEx
#include <winternl.h>  // TEB

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "native_thread_word.hpp"
#include "os.hpp"

namespace poolalloc::internal {
namespace {

// The fiber-local storage slot whose callback runs at each thread's exit (os_on_thread_exit).
// Atomic: the module's exit frees it while other threads may still run (end_thread_exit_calls).
constinit std::atomic<DWORD> g_thread_exit_slot{FLS_OUT_OF_INDEXES};
using ThreadExitCallback = void (*)(void*);
constinit std::atomic<ThreadExitCallback> g_thread_exit_callback{nullptr};
// The native thread-local storage slots of the core's thread-local words (native_thread_word.hpp),
// freed at the module's exit.
constexpr int kMaxClaimedSlots = 8;
constinit std::atomic<std::atomic<std::uint32_t>*> g_claimed_slots[kMaxClaimedSlots]{};
constinit std::atomic<int> g_claimed_count{0};
static_assert(offsetof(TEB, TlsSlots) == kTebTlsSlots);
static_assert(TLS_OUT_OF_INDEXES == kNoThreadSlot);

void WINAPI run_thread_exit_callback(void* value) {
  const ThreadExitCallback callback = g_thread_exit_callback.load(std::memory_order_acquire);
  if (value != nullptr && callback != nullptr) callback(value);
}

// At the module's exit: a DLL's atexit handlers run as it is unloaded (FreeLibrary), the
// program's at its exit. The slot's callback is code of this module: were the slot left, the
// exit of any thread that set a value, and the process's own exit, would call into a DLL that is
// gone. So the callback does nothing from now on, and the slot is freed (FlsFree calls the
// callback for every fiber's value, which now returns at once). The threads' caches stay as
// they are, as at the program's exit.
void end_thread_exit_calls() {
  g_thread_exit_callback.store(nullptr, std::memory_order_release);
  const DWORD slot = g_thread_exit_slot.exchange(FLS_OUT_OF_INDEXES, std::memory_order_acq_rel);
  if (slot != FLS_OUT_OF_INDEXES) FlsFree(slot);
  for (std::atomic<std::atomic<std::uint32_t>*>& claimed : g_claimed_slots) {
    std::atomic<std::uint32_t>* word = claimed.exchange(nullptr, std::memory_order_acq_rel);
    if (word == nullptr) continue;
    const std::uint32_t slot = word->exchange(kNoThreadSlot, std::memory_order_acq_rel);
    if (slot != kNoThreadSlot) TlsFree(slot);
  }
}

void* committed_or_null(void* p) {
  if (p == nullptr) errno = ENOMEM;
  return p;
}

}  // namespace

void* os_map(std::size_t bytes) {
  return committed_or_null(VirtualAlloc(nullptr, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE));
}

bool os_reserve(std::uintptr_t address, std::size_t bytes) {
  if (VirtualAlloc(reinterpret_cast<void*>(address), bytes, MEM_RESERVE, PAGE_NOACCESS) != nullptr)
    return true;
  errno = GetLastError() == ERROR_INVALID_ADDRESS ? EEXIST : ENOMEM;
  return false;
}

void os_unreserve(std::uintptr_t address, std::size_t) {
  // Fails, harmlessly, where os_unmap released the window already (below).
  VirtualFree(reinterpret_cast<void*>(address), 0, MEM_RELEASE);
}

// Commits pages inside the window os_reserve set aside: the commit charge grows (Windows does
// not overcommit), the pages cost memory only once touched.
void* os_map_noreserve_at(std::uintptr_t address, std::size_t bytes) {
  return committed_or_null(
      VirtualAlloc(reinterpret_cast<void*>(address), bytes, MEM_COMMIT, PAGE_READWRITE));
}

void* os_map_noreserve(std::size_t bytes) {
  return os_map(bytes);
}

// A mapping of its own (its start is where its allocation begins) is released whole; a part of
// the region's window is decommitted. The window's first part starts where the window does, so
// unmapping it releases the whole window: os_unreserve then finds nothing left to release.
void os_unmap(void* start, std::size_t bytes) {
  MEMORY_BASIC_INFORMATION info{};
  if (VirtualQuery(start, &info, sizeof info) == 0) return;
  if (info.AllocationBase == start) {
    VirtualFree(start, 0, MEM_RELEASE);
  } else {
    VirtualFree(start, bytes, MEM_DECOMMIT);
  }
}

// Windows has no mremap: a new mapping, the contents copied, the old one released.
void* os_remap(void* start, std::size_t old_bytes, std::size_t new_bytes) {
  void* moved = os_map(new_bytes);
  if (moved == nullptr) return nullptr;
  std::memcpy(moved, start, old_bytes < new_bytes ? old_bytes : new_bytes);
  os_unmap(start, old_bytes);
  return moved;
}

// Decommitted and committed again: the pages leave the working set and read as zeros at their
// next touch, as after madvise(MADV_DONTNEED). (DiscardVirtualMemory and MEM_RESET are one call,
// but leave the pages' contents undefined, and a span's bitmap page must read as zeros.) Between
// the two calls the pages are inaccessible: nothing reads them then but a double free of one of
// their blocks from another thread, a program's mistake that then faults.
void os_decommit(void* start, std::size_t bytes) {
  if (VirtualFree(start, bytes, MEM_DECOMMIT))
    VirtualAlloc(start, bytes, MEM_COMMIT, PAGE_READWRITE);
}

std::size_t os_resident_bytes(const void* start, std::size_t bytes) {
  constexpr std::size_t kChunkPages = 256;
  PSAPI_WORKING_SET_EX_INFORMATION pages[kChunkPages];
  std::size_t resident = 0;
  const auto address = reinterpret_cast<std::uintptr_t>(start);
  const std::size_t total_pages = (bytes + kPageSize - 1) / kPageSize;
  for (std::size_t done = 0; done < total_pages; done += kChunkPages) {
    const std::size_t count = total_pages - done < kChunkPages ? total_pages - done : kChunkPages;
    for (std::size_t i = 0; i < count; ++i)
      pages[i].VirtualAddress = reinterpret_cast<void*>(address + (done + i) * kPageSize);
    if (!QueryWorkingSetEx(GetCurrentProcess(), pages,
                           static_cast<DWORD>(count * sizeof(PSAPI_WORKING_SET_EX_INFORMATION))))
      return resident;
    for (std::size_t i = 0; i < count; ++i)
      resident += pages[i].VirtualAttributes.Valid * kPageSize;
  }
  return resident;
}

void os_futex_wait(std::atomic<int>& word, int expected) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
  WaitOnAddress(reinterpret_cast<volatile void*>(&word), &expected, sizeof expected, INFINITE);
}

void os_futex_wait_ms(std::atomic<int>& word, int expected, std::uint64_t ms) {
  const DWORD timeout = ms < INFINITE ? static_cast<DWORD>(ms) : INFINITE - 1;
  WaitOnAddress(reinterpret_cast<volatile void*>(&word), &expected, sizeof expected, timeout);
}

void os_futex_wake(std::atomic<int>& word, int waiters) {
  if (waiters == 1) {
    WakeByAddressSingle(reinterpret_cast<void*>(&word));
  } else {
    WakeByAddressAll(reinterpret_cast<void*>(&word));
  }
}

std::uint64_t os_clock_ms() {
  return GetTickCount64();
}

// FILETIME counts 100 ns from 1601-01-01, 11,644,473,600 s before the Unix epoch.
std::int64_t os_wall_clock_ns() {
  FILETIME now{};
  GetSystemTimePreciseAsFileTime(&now);
  const std::int64_t ticks =
      static_cast<std::int64_t>((std::uint64_t{now.dwHighDateTime} << 32) | now.dwLowDateTime);
  return (ticks - std::int64_t{116444736000000000}) * 100;
}

void os_sleep_ms(std::uint64_t ms) {
  Sleep(ms < INFINITE ? static_cast<DWORD>(ms) : INFINITE - 1);
}

void os_yield() {
  SwitchToThread();
}

bool os_membarrier_register() {
  return true;
}

bool os_membarrier() {
  FlushProcessWriteBuffers();
  return true;
}

int os_process_id() {
  return static_cast<int>(GetCurrentProcessId());
}

int os_thread_id() {
  return static_cast<int>(GetCurrentThreadId());
}

// A thread's object stays signalled while a handle to it is open; without one the id names no
// thread (or, reused, a live one: its cache is then kept, as on Linux).
bool os_thread_exited(int, int tid) {
  HANDLE thread = OpenThread(SYNCHRONIZE, FALSE, static_cast<DWORD>(tid));
  if (thread == nullptr) return GetLastError() == ERROR_INVALID_PARAMETER;
  const bool exited = WaitForSingleObject(thread, 0) == WAIT_OBJECT_0;
  CloseHandle(thread);
  return exited;
}

bool os_on_thread_exit(void (*callback)(void*)) {
  g_thread_exit_callback.store(callback, std::memory_order_release);
  const DWORD slot = FlsAlloc(run_thread_exit_callback);
  if (slot == FLS_OUT_OF_INDEXES) return false;
  g_thread_exit_slot.store(slot, std::memory_order_release);
  std::atexit(end_thread_exit_calls);
  return true;
}

void os_set_thread_exit_value(void* value) {
  const DWORD slot = g_thread_exit_slot.load(std::memory_order_acquire);
  if (slot != FLS_OUT_OF_INDEXES) FlsSetValue(slot, value);
}

// The thread's exit runs the callbacks of its running fiber's values; DeleteFiber those of the
// deleted fiber, which is not the running one (deleting the running fiber ends the thread).
bool os_thread_exit_is_running(const void* value) {
  const DWORD slot = g_thread_exit_slot.load(std::memory_order_acquire);
  return slot != FLS_OUT_OF_INDEXES && FlsGetValue(slot) == value;
}

std::uint32_t os_claim_thread_slot(std::atomic<std::uint32_t>& slot) {
  const DWORD error = GetLastError();  // a failed TlsAlloc sets it: the program's is kept
  const DWORD claimed = TlsAlloc();
  SetLastError(error);
  if (claimed == TLS_OUT_OF_INDEXES) return kNoThreadSlot;
  std::uint32_t expected = kNoThreadSlot;
  if (!slot.compare_exchange_strong(expected, claimed, std::memory_order_acq_rel)) {
    TlsFree(claimed);  // another thread claimed one first
    return expected;
  }
  const int index = g_claimed_count.fetch_add(1, std::memory_order_acq_rel);
  if (index < kMaxClaimedSlots) g_claimed_slots[index].store(&slot, std::memory_order_release);
  return claimed;
}

// TlsGetValue and TlsSetValue set the thread's last error: the program's is kept.
std::uintptr_t os_read_thread_slot(std::uint32_t slot) {
  const DWORD error = GetLastError();
  const auto value = reinterpret_cast<std::uintptr_t>(TlsGetValue(slot));
  SetLastError(error);
  return value;
}

void os_write_thread_slot(std::uint32_t slot, std::uintptr_t value) {
  if (slot < 64) {
    __writegsqword(kTebTlsSlots + slot * sizeof(void*), value);
    return;
  }
  const DWORD error = GetLastError();
  TlsSetValue(slot, reinterpret_cast<void*>(value));
  SetLastError(error);
}

// ANSI, with '/' and '\' both separators; a path that does not fit is refused.
bool os_working_directory(char* path, std::size_t capacity) {
  const DWORD length = GetCurrentDirectoryA(static_cast<DWORD>(capacity), path);
  return length > 0 && length < capacity;
}

std::uint64_t os_random_bits() {
  std::uint64_t bits = 0;
  if (RtlGenRandom(&bits, sizeof bits)) return bits;
  // Not expected: the clock and the stack's randomised address, mixed.
  LARGE_INTEGER now{};
  QueryPerformanceCounter(&now);
  return mix_bits(static_cast<std::uint64_t>(now.QuadPart)) ^
         mix_bits(reinterpret_cast<std::uintptr_t>(&now));
}

}  // namespace poolalloc::internal
