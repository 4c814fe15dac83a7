// StackAllocator: bump allocation given back in LIFO order, to a marker taken earlier.
//
//   const auto m = stack.marker();
//   ... allocate ...
//   stack.free_to_marker(m);            // or let a StackScope do it
//
// A marker above the current top (memory already given back) is reported and aborts.
// allocate(), new_object<T>() and new_array<T>() are O(1) and return nullptr when the stack is
// full, whatever the size or alignment. Over owned memory or the caller's.
// Not thread-safe, by choice: use one per thread.
#pragma once

#include <cstddef>
#include <ostream>

#include "detail/bump_region.hpp"
#include "detail/message.hpp"
#include "detail/printing.hpp"

namespace poolalloc {

class StackAllocator : private detail::BumpRegion {
 public:
  // A position in the stack: what was used when it was taken.
  class Marker {
   public:
    friend bool operator==(Marker, Marker) = default;

   private:
    friend class StackAllocator;
    explicit Marker(std::size_t used) : used_(used) {}
    std::size_t used_;
  };

  // StackAllocator(std::size_t capacity_bytes), or StackAllocator(void* buffer, std::size_t bytes)
  // over caller memory.
  using BumpRegion::BumpRegion;

  using BumpRegion::allocate;
  using BumpRegion::new_array;
  using BumpRegion::new_object;

  [[nodiscard]] Marker marker() const { return Marker(used()); }

  // Gives back everything allocated since `m` was taken.
  void free_to_marker(Marker m) {
    if (m.used_ > used()) [[unlikely]] {
      detail::Message message;
      message << "poolalloc: ";
      detail::write_title(message, "StackAllocator", name(), this)
          << " (" << used() << " of " << capacity() << " B used): free_to_marker(" << m.used_
          << ") is above the top; that memory was already given back";
      detail::fatal(message);
    }
    rewind(m.used_);
  }

  using BumpRegion::capacity;
  using BumpRegion::name;
  using BumpRegion::peak;
  using BumpRegion::set_name;
  using BumpRegion::used;

  friend std::ostream& operator<<(std::ostream& out, const StackAllocator& stack) {
    return stack.print(out, "StackAllocator");
  }
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
