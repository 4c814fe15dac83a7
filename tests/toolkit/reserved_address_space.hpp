// Address space reserved and never touched, for tests of what creating a pool must not touch:
// mmap of PROT_NONE pages on POSIX, VirtualAlloc's MEM_RESERVE on Windows.
#pragma once

#include <cstddef>

#if defined(_WIN32)
#if !defined(NOMINMAX)
#define NOMINMAX  // no min and max macros (mingw's C++ library defines it already)
#endif
#include <windows.h>
#else
#include <sys/mman.h>
#endif

class ReservedAddressSpace {
 public:
  explicit ReservedAddressSpace(std::size_t bytes) : bytes_(bytes) {
#if defined(_WIN32)
    start_ = VirtualAlloc(nullptr, bytes, MEM_RESERVE, PAGE_NOACCESS);
#else
    start_ = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (start_ == MAP_FAILED) start_ = nullptr;
#endif
  }
  ~ReservedAddressSpace() {
    if (start_ == nullptr) return;
#if defined(_WIN32)
    VirtualFree(start_, 0, MEM_RELEASE);
#else
    munmap(start_, bytes_);
#endif
  }
  ReservedAddressSpace(const ReservedAddressSpace&) = delete;
  ReservedAddressSpace& operator=(const ReservedAddressSpace&) = delete;

  // nullptr when the reservation failed.
  [[nodiscard]] void* start() const {
    return start_;
  }

 private:
  std::size_t bytes_;
  void* start_;
};
