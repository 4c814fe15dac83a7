// Address space reserved from the operating system and committed from its start as it is used:
// where a growable Pool<T> keeps its slots, so that it grows in place and a grown pool finds a
// slot as one created at full size does (detail/slot_chunks.hpp).
//
// A reservation takes no memory, only addresses: mmap of PROT_NONE pages on POSIX, MEM_RESERVE
// on Windows. Committing makes pages readable and writable (mprotect, MEM_COMMIT) without touching
// them; the system gives a page its memory when it is first written. So reserving more than a
// pool will ever use costs addresses, which a 64-bit process has plenty of, but it must not take
// them all: a range is kBytes, the ranges of a process hold kProcessBytes at most (1,024 pools),
// and there is none where the address space is limited (RLIMIT_AS, as `ulimit -v` sets, which a
// reservation counts against), on a 32-bit target, or where the system refuses. A pool without one
// grows in chunks from operator new, as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "poison.hpp"

#if defined(_WIN64)
// The two functions of <windows.h> that a range needs, declared as it declares them: the header
// itself would define macros (min, max, near, far, ...) in every program that includes the toolkit.
extern "C" {
__declspec(dllimport) void* __stdcall VirtualAlloc(void* address, unsigned long long bytes,
                                                   unsigned long type, unsigned long protection);
__declspec(dllimport) int __stdcall VirtualFree(void* address, unsigned long long bytes,
                                                unsigned long type);
}
#elif !defined(_WIN32)
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace poolalloc::detail {

class AddressRange {
 public:
  static constexpr std::size_t kBytes = std::size_t{1} << 30;
  static constexpr std::size_t kProcessBytes = kBytes << 10;

  // No range: holds() nothing, commit_to() of anything above 0 fails.
  AddressRange() = default;
  AddressRange(AddressRange&& other) noexcept
      : start_(std::exchange(other.start_, nullptr)),
        committed_(std::exchange(other.committed_, 0)) {}
  AddressRange& operator=(AddressRange&& other) noexcept {
    AddressRange taken(std::move(other));
    swap(taken);
    return *this;
  }
  AddressRange(const AddressRange&) = delete;
  AddressRange& operator=(const AddressRange&) = delete;
  ~AddressRange() {
    if (start_ == nullptr) return;
    remove_leak_root(start_, kBytes);
    release(start_);
    reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
  }

  void swap(AddressRange& other) noexcept {
    std::swap(start_, other.start_);
    std::swap(committed_, other.committed_);
  }

  // A range of kBytes, or none (see above).
  [[nodiscard]] static AddressRange reserve() {
    AddressRange range;
    if (sizeof(void*) < 8 || address_space_is_limited()) return range;
    if (reserved_in_process().fetch_add(kBytes, std::memory_order_relaxed) + kBytes >
        kProcessBytes) {
      reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
      return range;
    }
    range.start_ = reserve_pages();
    if (range.start_ == nullptr) {
      reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
    } else {
      add_leak_root(range.start_, kBytes);
    }
    return range;
  }

  [[nodiscard]] explicit operator bool() const { return start_ != nullptr; }
  [[nodiscard]] std::byte* start() const { return start_; }

  // Whether `p` points into the range.
  [[nodiscard]] bool holds(const void* p) const {
    return reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(start_) <
               kBytes &&
           start_ != nullptr;
  }

  // Makes the bytes [0, end) usable, committing whole pages past those committed; false (and
  // nothing changed) when `end` lies past the range or the system refuses the memory.
  [[nodiscard]] bool commit_to(std::size_t end) {
    if (start_ == nullptr || end > kBytes) return false;
    if (end <= committed_) return true;
    const std::size_t to = round_up_to_page(end);
    if (!commit(start_ + committed_, to - committed_)) return false;
    committed_ = to;
    return true;
  }

  // Gives the system back the memory of the whole pages from `begin` on; their addresses stay in
  // the range, for commit_to() again. (Where POSIX cannot replace the pages with fresh reserved
  // ones, their memory goes back and they stay committed.)
  void decommit_from(std::size_t begin) {
    const std::size_t from = round_up_to_page(begin);
    if (from < committed_ && decommit(start_ + from, committed_ - from)) committed_ = from;
  }

 private:
  static std::atomic<std::size_t>& reserved_in_process() {
    static std::atomic<std::size_t> bytes{0};
    return bytes;
  }

  static std::size_t round_up_to_page(std::size_t bytes) {
    const std::size_t page = page_size();
    return (bytes + page - 1) / page * page;
  }

  // What each system does: kBytes of addresses reserved (nullptr where it refuses), pages made
  // usable, pages given back (false where they stay committed), the addresses given back.
#if defined(_WIN64)
  static constexpr unsigned long kCommit = 0x1000, kReserve = 0x2000, kDecommit = 0x4000,
                                 kRelease = 0x8000, kNoAccess = 0x01, kReadWrite = 0x04;
  // Every Windows on x86-64 and ARM64.
  static std::size_t page_size() {
    return 4096;
  }
  static bool address_space_is_limited() {
    return false;
  }
  static std::byte* reserve_pages() {
    return static_cast<std::byte*>(VirtualAlloc(nullptr, kBytes, kReserve, kNoAccess));
  }
  static bool commit(std::byte* pages, std::size_t bytes) {
    return VirtualAlloc(pages, bytes, kCommit, kReadWrite) != nullptr;
  }
  static bool decommit(std::byte* pages, std::size_t bytes) {
    return VirtualFree(pages, bytes, kDecommit) != 0;
  }
  static void release(std::byte* start) {
    VirtualFree(start, 0, kRelease);
  }
#elif defined(_WIN32)  // 32-bit Windows: no range (reserve() returns none before asking)
  static std::size_t page_size() {
    return 4096;
  }
  static bool address_space_is_limited() {
    return true;
  }
  static std::byte* reserve_pages() {
    return nullptr;
  }
  static bool commit(std::byte*, std::size_t) {
    return false;
  }
  static bool decommit(std::byte*, std::size_t) {
    return false;
  }
  static void release(std::byte*) {}
#else
  static std::size_t page_size() {
    static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
  }
  // A reservation counts against RLIMIT_AS, and would take from what malloc may have.
  static bool address_space_is_limited() {
    rlimit limit{};
    return getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY;
  }
  static std::byte* reserve_pages() {
    void* start =
        mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return start == MAP_FAILED ? nullptr : static_cast<std::byte*>(start);
  }
  static bool commit(std::byte* pages, std::size_t bytes) {
    return mprotect(pages, bytes, PROT_READ | PROT_WRITE) == 0;
  }
  // Fresh reserved pages over the committed ones: their memory, and its commit charge, go back.
  static bool decommit(std::byte* pages, std::size_t bytes) {
    if (mmap(pages, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) != MAP_FAILED) {
      return true;
    }
    madvise(pages, bytes, MADV_DONTNEED);
    return false;
  }
  static void release(std::byte* start) {
    munmap(start, kBytes);
  }
#endif

  std::byte* start_ = nullptr;
  std::size_t committed_ = 0;
};

}  // namespace poolalloc::detail
