// One run of bytes handed out front to back, owned or the caller's: the common core of
// FrameAllocator and StackAllocator, which differ only in how they give memory back.
//
// Memory given back is guarded against pointers kept from before: under AddressSanitizer it is
// poisoned (a touch is reported as use-after-poison) until handed out again; with debug checks
// it is filled with kFreedFill, and allocate reports a byte that no longer holds it before it
// hands the byte out again (filled with kFreshFill).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <ostream>
#include <string_view>
#include <utility>

#include "../debug_checks.hpp"
#include "align.hpp"
#include "cold.hpp"
#include "construct.hpp"
#include "debug_blocks.hpp"
#include "message.hpp"
#include "name.hpp"
#include "poison.hpp"
#include "printing.hpp"

namespace poolalloc::detail {

class BumpRegion {
 public:
  // `kind` names the allocator in reports and printing. Without the memory, the region holds
  // nothing (capacity 0, every allocate nullptr), as every arena of the toolkit does: nothing
  // throws. A capacity over PTRDIFF_MAX is refused without asking: no pointer difference spans it.
  BumpRegion(std::string_view kind, std::size_t capacity, DebugChecks debug)
      : owned_(capacity > PTRDIFF_MAX ? nullptr
                                      : static_cast<std::byte*>(::operator new(
                                            capacity, kOwnedAlignment, std::nothrow))),
        memory_(owned_.get()),
        top_(memory_),
        end_(memory_ == nullptr ? nullptr : memory_ + capacity),
        limit_(debug == DebugChecks::on ? top_ : end_),
        debug_(debug == DebugChecks::on),
        kind_(kind) {
    mark_given_back(memory_, end_);
  }

  // Over the caller's memory, which it never frees; a null buffer holds nothing.
  BumpRegion(std::string_view kind, void* buffer, std::size_t bytes, DebugChecks debug)
      : memory_(static_cast<std::byte*>(buffer)),
        top_(memory_),
        end_(buffer == nullptr ? nullptr : memory_ + bytes),
        limit_(debug == DebugChecks::on ? top_ : end_),
        debug_(debug == DebugChecks::on),
        kind_(kind) {
    mark_given_back(memory_, end_);
  }

  // The memory, what is in use and the peak go with a move; the source is left empty (capacity
  // 0, every allocate nullptr), so that it never hands out what is now another's.
  BumpRegion(BumpRegion&& other) noexcept
      : owned_(std::move(other.owned_)),
        memory_(std::exchange(other.memory_, nullptr)),
        top_(std::exchange(other.top_, nullptr)),
        end_(std::exchange(other.end_, nullptr)),
        limit_(std::exchange(other.limit_, nullptr)),
        peak_(std::exchange(other.peak_, 0)),
        rewinds_(std::exchange(other.rewinds_, 0)),
        last_rewind_(std::exchange(other.last_rewind_, nullptr)),
        debug_(other.debug_),
        kind_(other.kind_),
        name_(other.name_) {}

  // Frees the target's own memory (the caller's is the caller's again) first.
  BumpRegion& operator=(BumpRegion&& other) noexcept {
    if (this != &other) {
      unpoison(memory_, capacity());
      owned_ = std::move(other.owned_);
      memory_ = std::exchange(other.memory_, nullptr);
      top_ = std::exchange(other.top_, nullptr);
      end_ = std::exchange(other.end_, nullptr);
      limit_ = std::exchange(other.limit_, nullptr);
      peak_ = std::exchange(other.peak_, 0);
      rewinds_ = std::exchange(other.rewinds_, 0);
      last_rewind_ = std::exchange(other.last_rewind_, nullptr);
      debug_ = other.debug_;
      name_ = other.name_;
    }
    return *this;
  }

  ~BumpRegion() { unpoison(memory_, capacity()); }

  // nullptr when the alignment is not a power of two or the request does not fit; the
  // arithmetic is done on the room left, so no size or alignment can overflow it.
  // The path that hands out memory is a dozen instructions (g++ -O2, x86-64): two compares of
  // the alignment, the padding (a negate and a mask), two compares against the room, the new
  // top. Debug checks cost it nothing: they take the path of a request that does not fit (see
  // limit_). Nor is the peak kept here, but when memory is given back (see peak()).
  [[nodiscard]] void* allocate(std::size_t size,
                               std::size_t alignment = alignof(std::max_align_t)) {
    if (!is_valid_alignment(alignment)) return nullptr;
    const std::size_t padding = padding_to_align(top_, alignment);
    const auto room = static_cast<std::size_t>(limit_ - top_);
    if (padding > room || size > room - padding) [[unlikely]]
      return debug_ ? allocate_checked(size, padding) : nullptr;
    std::byte* const block = top_ + padding;
    unpoison(block, size);
    top_ = block + size;
    return block;
  }

  // A T constructed in place (an aggregate from its members, see construct.hpp); nullptr when it
  // does not fit. Giving the memory back runs no
  // destructor: meant for trivially destructible types, or call ~T() yourself. If T's
  // constructor throws, its memory stays used until the memory is given back.
  template <class T, class... Args>
  [[nodiscard]] T* new_object(Args&&... args) {
    void* memory = allocate(sizeof(T), alignof(T));
    return memory == nullptr ? nullptr : construct<T>(memory, std::forward<Args>(args)...);
  }

  // n default-initialised Ts, as new T[n] makes them; nullptr when they do not fit.
  template <class T>
  [[nodiscard]] T* new_array(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) return nullptr;
    auto* array = static_cast<T*>(allocate(n * sizeof(T), alignof(T)));
    if (array != nullptr) std::uninitialized_default_construct_n(array, n);
    return array;
  }

  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  [[nodiscard]] std::size_t used() const { return offset(top_); }
  [[nodiscard]] std::size_t peak() const { return std::max(peak_, used()); }
  [[nodiscard]] std::size_t capacity() const { return offset(end_); }
  [[nodiscard]] bool debug_checks() const { return debug_; }

 protected:
  [[nodiscard]] std::byte* bottom() const { return memory_; }
  [[nodiscard]] std::byte* top() const { return top_; }
  // How many rewinds there were, and where the last one went: what tells a stack's stale marker.
  [[nodiscard]] std::uint64_t rewinds() const { return rewinds_; }
  [[nodiscard]] std::byte* last_rewind() const { return last_rewind_; }
  [[nodiscard]] std::size_t offset(const std::byte* p) const {
    return static_cast<std::size_t>(p - memory_);
  }

  // Gives back everything from `to`, a position at or below the top. The bytes in use only grow
  // between two rewinds, so the peak taken here, and in peak() for the current run, is the
  // most ever in use at once.
  void rewind(std::byte* to) {
    peak_ = peak();
    mark_given_back(to, top_);
    top_ = to;
    if (debug_) limit_ = to;
    ++rewinds_;
    last_rewind_ = to;
  }

  // `FrameAllocator "scratch" (300 of 65536 B used)`, to begin a report.
  void write_report_title(Message& message) const {
    message << "poolalloc: ";
    write_title(message, kind_, name(), this)
        << " (" << used() << " of " << capacity() << " B used)";
  }

  // `FrameAllocator "scratch": 300 of 65536 B used, peak 1200 B`
  std::ostream& print(std::ostream& out) const {
    return write_line(out, [this](std::ostream& line) {
      write_title(line, kind_, name(), this)
          << ": " << used() << " of " << capacity() << " B used, peak " << peak() << " B";
    });
  }

 private:
  // Filled with kFreedFill with debug checks, poisoned under AddressSanitizer.
  void mark_given_back(std::byte* from, std::byte* until) const {
    const auto bytes = static_cast<std::size_t>(until - from);
    if (bytes == 0) return;  // `from` may be null
    if (debug_) {
      unpoison(from, bytes);  // padding between blocks was never unpoisoned
      fill(from, bytes, kFreedFill);
    }
    poison(from, bytes);
  }

  // allocate() with debug checks, where the request fits between the top and the end.
  [[nodiscard, POOLALLOC_NOINLINE]] void* allocate_checked(std::size_t size, std::size_t padding) {
    const auto room = static_cast<std::size_t>(end_ - top_);
    if (padding > room || size > room - padding) return nullptr;
    std::byte* const block = top_ + padding;
    hand_out_checked(top_, block, block + size);
    unpoison(block, size);
    top_ = limit_ = block + size;
    return block;
  }

  // With debug checks, the bytes about to be handed out, [from, until) with the padding before
  // `block`, still hold the fill they were given back with, or a pointer kept from before wrote
  // into them. The block is then filled with kFreshFill.
  void hand_out_checked(std::byte* from, std::byte* block, std::byte* until) const {
    if (from == until) return;  // `from` may be null
    unpoison(from, static_cast<std::size_t>(until - from));
    const std::byte* written =
        std::find_if(from, until, [](std::byte b) { return b != std::byte{kFreedFill}; });
    if (written != until) {
      Message message;
      write_report_title(message);
      message << ": allocate found " << static_cast<const void*>(written)
              << " written after it was given back";
      fatal(message);
    }
    fill(block, static_cast<std::size_t>(until - block), kFreshFill);
    poison(from, static_cast<std::size_t>(block - from));
  }

  static constexpr std::align_val_t kOwnedAlignment{alignof(std::max_align_t)};
  struct FreeOwned {
    void operator()(std::byte* memory) const { ::operator delete(memory, kOwnedAlignment); }
  };

  std::unique_ptr<std::byte, FreeOwned> owned_;  // null over caller memory or without memory
  std::byte* memory_;
  std::byte* top_;  // the next byte to hand out
  std::byte* end_;
  // How far allocate() may move the top without debug checks: the end, or with debug checks
  // the top itself, so that every request that hands out a byte takes the checked path.
  std::byte* limit_;
  std::size_t peak_ = 0;  // the most bytes in use at once before the last rewind
  std::uint64_t rewinds_ = 0;
  std::byte* last_rewind_ = nullptr;
  bool debug_;
  std::string_view kind_;
  Name name_;
};

}  // namespace poolalloc::detail
