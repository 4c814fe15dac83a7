// StackAllocator: bump allocation given back in LIFO order, to a marker taken earlier.
//
//   const auto m = stack.marker();
//   ... allocate ...
//   stack.free_to_marker(m);            // or let a StackScope do it
//
// A marker of another stack (one moved from or destroyed included, whatever memory it had), one
// above the top, and one that the last free went below are reported and abort. allocate(),
// new_object<T>() and new_array<T>() are O(1) and return nullptr when the stack is full, whatever
// the size or alignment. Over owned memory or the caller's; one whose memory cannot be had (a
// huge capacity) has capacity 0 and allocates nullptr, and nothing throws. A move takes the memory,
// and the markers' validity, along and leaves the source empty. Memory given back is poisoned under
// AddressSanitizer and, with debug checks, filled and checked when handed out again
// (detail/bump_region.hpp). Not thread-safe, by choice: use one per thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <utility>

#include "detail/bump_region.hpp"
#include "detail/cold.hpp"
#include "detail/message.hpp"

namespace poolalloc {

class StackAllocator : private detail::BumpRegion {
 public:
  // A position in one stack, the stack's serial number and its count of frees when it was taken:
  // markers are equal when they mark the same position of the same stack. Markers stay valid
  // across a move: the memory they point into, and the serial number, move along.
  class Marker {
   public:
    friend bool operator==(Marker a, Marker b) {
      return a.top_ == b.top_ && a.serial_ == b.serial_;
    }

   private:
    friend class StackAllocator;
    Marker(std::byte* top, std::uint64_t serial, std::uint64_t rewinds)
        : top_(top), serial_(serial), rewinds_(rewinds) {}
    std::byte* top_;
    std::uint64_t serial_;
    std::uint64_t rewinds_;
  };

  explicit StackAllocator(std::size_t capacity_bytes, DebugChecks debug = kDefaultDebugChecks)
      : BumpRegion("StackAllocator", capacity_bytes, debug) {}
  // Over caller memory.
  StackAllocator(void* buffer, std::size_t bytes, DebugChecks debug = kDefaultDebugChecks)
      : BumpRegion("StackAllocator", buffer, bytes, debug) {}

  using BumpRegion::allocate;
  using BumpRegion::new_array;
  using BumpRegion::new_object;

  [[nodiscard]] Marker marker() const { return Marker(top(), serial_.value, rewinds()); }

  // Gives back everything allocated since `m` was taken. Three markers are reported, and abort:
  // one of another stack (its serial number is not this stack's: one compare, which no address
  // test could do, since another stack may have had this memory, or end where this one starts),
  // one above the top (its memory given back already), and one that the last free went below
  // (given back, and perhaps handed out again since: freeing to it would free what others now
  // hold; two compares). A marker that an earlier free went below, with frees above it since, is
  // not seen.
  void free_to_marker(Marker m) {
    if (m.serial_ != serial_.value) [[unlikely]]
      fail_free_to_marker(m, "is of another stack");
    if (m.top_ > top()) [[unlikely]]
      fail_free_to_marker(m, "is above the top; that memory was already given back");
    if (m.rewinds_ < rewinds() && m.top_ > last_rewind()) [[unlikely]]
      fail_free_to_marker(
          m,
          "was taken before a free below it; that memory was given back and may be another's now");
    rewind(m.top_);
  }

  using BumpRegion::capacity;
  using BumpRegion::debug_checks;
  using BumpRegion::name;
  using BumpRegion::peak;
  using BumpRegion::set_name;
  using BumpRegion::used;

  friend std::ostream& operator<<(std::ostream& out, const StackAllocator& stack) {
    return stack.print(out);
  }

 private:
  [[noreturn, POOLALLOC_COLD]] void fail_free_to_marker(Marker m, const char* what) const {
    detail::Message message;
    write_report_title(message);
    message << ": free_to_marker(";
    if (m.serial_ == serial_.value) {
      message << offset(m.top_);
    } else {
      message << static_cast<const void*>(m.top_);
    }
    message << ") " << what;
    detail::fatal(message);
  }

  // A number no other stack has had: taken from a counter at construction, moved along with the
  // memory, and a new one for the stack moved from, so that its markers are another stack's.
  struct Serial {
    Serial() = default;
    Serial(Serial&& other) noexcept : value(std::exchange(other.value, next())) {}
    Serial& operator=(Serial&& other) noexcept {
      value = std::exchange(other.value, next());
      return *this;
    }
    static std::uint64_t next() {
      static constinit std::atomic<std::uint64_t> counter{0};
      return counter.fetch_add(1, std::memory_order_relaxed);
    }
    std::uint64_t value = next();
  };

  Serial serial_;
};

// Frees the stack to the marker taken at construction when the scope ends.
class StackScope {
 public:
  explicit StackScope(StackAllocator& stack) : stack_(stack), marker_(stack.marker()) {}
  StackScope(const StackScope&) = delete;
  StackScope& operator=(const StackScope&) = delete;
  ~StackScope() { stack_.free_to_marker(marker_); }

 private:
  StackAllocator& stack_;
  StackAllocator::Marker marker_;
};

}  // namespace poolalloc
