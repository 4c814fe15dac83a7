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

#if defined(_WIN32)
#if !defined(NOMINMAX)
#define NOMINMAX  // no min and max macros (mingw's C++ library defines it already)
#endif
#include <windows.h>
#else
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
#if defined(_WIN32)
    VirtualFree(start_, 0, MEM_RELEASE);
#else
    munmap(start_, kBytes);
#endif
    reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
  }

  void swap(AddressRange& other) noexcept {
    std::swap(start_, other.start_);
    std::swap(committed_, other.committed_);
  }

  // A range of kBytes, or none (see above).
  [[nodiscard]] static AddressRange reserve() {
    AddressRange range;
    if constexpr (sizeof(void*) < 8) {
      return range;
    } else {
      if (address_space_is_limited()) return range;
      if (reserved_in_process().fetch_add(kBytes, std::memory_order_relaxed) + kBytes >
          kProcessBytes) {
        reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
        return range;
      }
#if defined(_WIN32)
      range.start_ =
          static_cast<std::byte*>(VirtualAlloc(nullptr, kBytes, MEM_RESERVE, PAGE_NOACCESS));
#else
      void* start =
          mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      range.start_ = start == MAP_FAILED ? nullptr : static_cast<std::byte*>(start);
#endif
      if (range.start_ == nullptr)
        reserved_in_process().fetch_sub(kBytes, std::memory_order_relaxed);
      return range;
    }
  }

  [[nodiscard]] explicit operator bool() const {
    return start_ != nullptr;
  }
  [[nodiscard]] std::byte* start() const {
    return start_;
  }

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
#if defined(_WIN32)
    if (VirtualAlloc(start_ + committed_, to - committed_, MEM_COMMIT, PAGE_READWRITE) == nullptr)
      return false;
#else
    if (mprotect(start_ + committed_, to - committed_, PROT_READ | PROT_WRITE) != 0) return false;
#endif
    committed_ = to;
    return true;
  }

  // Gives the system back the memory of the whole pages from `begin` on; their addresses stay in
  // the range, for commit_to() again. (Where POSIX cannot replace the pages with fresh reserved
  // ones, their memory goes back and they stay committed.)
  void decommit_from(std::size_t begin) {
    const std::size_t from = round_up_to_page(begin);
    if (from >= committed_) return;
#if defined(_WIN32)
    VirtualFree(start_ + from, committed_ - from, MEM_DECOMMIT);
#else
    if (mmap(start_ + from, committed_ - from, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED) {
      madvise(start_ + from, committed_ - from, MADV_DONTNEED);
      return;
    }
#endif
    committed_ = from;
  }

  // The bytes from start() on that are committed: a whole number of pages.
  [[nodiscard]] std::size_t committed() const {
    return committed_;
  }

 private:
  static std::atomic<std::size_t>& reserved_in_process() {
    static std::atomic<std::size_t> bytes{0};
    return bytes;
  }

  static std::size_t page_size() {
#if defined(_WIN32)
    static const std::size_t size = [] {
      SYSTEM_INFO info;
      GetSystemInfo(&info);
      return static_cast<std::size_t>(info.dwPageSize);
    }();
#else
    static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
#endif
    return size;
  }

  static std::size_t round_up_to_page(std::size_t bytes) {
    const std::size_t page = page_size();
    return (bytes + page - 1) / page * page;
  }

  static bool address_space_is_limited() {
#if defined(_WIN32)
    return false;
#else
    rlimit limit{};
    return getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY;
#endif
  }

  std::byte* start_ = nullptr;
  std::size_t committed_ = 0;
};

}  // namespace poolalloc::detail
