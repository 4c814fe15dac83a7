// StackAllocator: bump allocation given back in LIFO order, to a marker taken earlier.
//
//   const auto m = stack.marker();
//   ... allocate ...
//   stack.free_to_marker(m);            // or let a StackScope do it
//
// A marker above the current top (memory already given back) is reported and aborts.
// allocate() is O(1) and returns nullptr when the stack is full, whatever the size or alignment.
// Not thread-safe, by choice: use one per thread.
#pragma once

#include <cstddef>

#include "detail/bump_region.hpp"
#include "detail/message.hpp"

namespace poolalloc {

class StackAllocator {
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

  explicit StackAllocator(std::size_t capacity_bytes) : region_(capacity_bytes) {}

  // nullptr when the request does not fit or the alignment is not a power of two.
  [[nodiscard]] void* allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
    return region_.allocate(size, align);
  }

  [[nodiscard]] Marker marker() const { return Marker(region_.used()); }

  // Gives back everything allocated since `m` was taken.
  void free_to_marker(Marker m) {
    if (m.used_ > region_.used()) [[unlikely]] {
      detail::Message message;
      message << "poolalloc: StackAllocator " << static_cast<const void*>(this) << " (" << used()
              << " of " << capacity() << " B used): free_to_marker(" << m.used_
              << ") is above the top; that memory was already given back";
      detail::fatal(message);
    }
    region_.rewind(m.used_);
  }

  [[nodiscard]] std::size_t used() const { return region_.used(); }
  [[nodiscard]] std::size_t peak() const { return region_.peak(); }
  [[nodiscard]] std::size_t capacity() const { return region_.capacity(); }

 private:
  detail::BumpRegion region_;
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
