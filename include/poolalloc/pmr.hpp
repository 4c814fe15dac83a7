// Adapters from the toolkit's allocators to the standard library's allocator interfaces.
//
// - PoolResource: a std::pmr::memory_resource serving requests up to a size from FixedPools,
//   one per 8-byte step up to 128 bytes and one per power of two from there (requests above it,
//   or more aligned, go upstream). The blocks given back wait on a stack per size and are handed
//   out again first, last in first out: a deallocate is a push that checks nothing, but with debug
//   checks, where every block goes back to its pool, which checks it. used() counts the bytes
//   asked for, reserved() the bytes it holds.
// - FrameResource, StackResource: memory_resources over a FrameAllocator (or the current frame of
//   a DoubleBufferedFrameAllocator) / StackAllocator. Their deallocate does nothing: the memory
//   comes back with reset() / swap_buffers() / free_to_marker().
// - StlAllocator<T, Arena>: a standard allocator over any arena with allocate(size, align) (and,
//   if it has one, deallocate(p, size, align)), so std::vector<T, StlAllocator<T, Arena>> works;
//   or over a FixedPool (or a Tracked or Synchronized one), one T at a time, for node containers
//   (std::list, std::map, ...).
// - SynchronizedPoolResource: a PoolResource behind a lock, for pmr containers on several threads.
//
// Exhaustion throws std::bad_alloc, as these interfaces require; a PoolResource whose chunks
// could never be allocated throws when it is constructed. With exceptions off, each of these
// reports and aborts instead. Not thread-safe, by choice, but for SynchronizedPoolResource.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/cold.hpp"
#include "detail/exceptions.hpp"
#include "detail/message.hpp"
#include "detail/name.hpp"
#include "detail/printing.hpp"
#include "fixed_pool.hpp"
#include "frame_allocator.hpp"
#include "stack_allocator.hpp"
#include "synchronized.hpp"

namespace poolalloc {

class PoolResource final : public std::pmr::memory_resource {
 public:
  static constexpr std::size_t kSmallestBlock = 8;
  static constexpr std::size_t kLargestBlockLimit = std::size_t{1} << 20;
  // Requests up to kLargestStep bytes, aligned to at most kStepAlignment, take blocks of the next
  // multiple of 8 bytes (of 16 where they ask for 16), so that a std::map's 40-byte nodes take 40
  // rather than 64: such a pool's blocks are aligned to 16 where their size is a multiple of 16,
  // else to 8. Larger or more aligned requests take blocks of a power of two, aligned to it.
  static constexpr std::size_t kLargestStep = 128;
  static constexpr std::size_t kStepAlignment = 16;

  // largest_block is rounded up to a power of two (at most kLargestBlockLimit). A size's pool
  // is created when it is first used, with blocks_per_chunk blocks, and doubles when full.
  // Throws std::invalid_argument for blocks_per_chunk 0, and std::length_error when a chunk of
  // blocks_per_chunk of the largest blocks is over FixedPool's limit (max_blocks_per_chunk);
  // reports and aborts with exceptions off.
  // `debug` is given to every pool.
  explicit PoolResource(std::size_t largest_block = 256, std::size_t blocks_per_chunk = 64,
                        std::pmr::memory_resource* upstream = std::pmr::get_default_resource(),
                        DebugChecks debug = kDefaultDebugChecks)
      : fast_pools_(fast_pools_of(rounded_largest_block(largest_block), debug)),
        largest_block_(rounded_largest_block(largest_block)),
        blocks_per_chunk_(checked_blocks_per_chunk(blocks_per_chunk, largest_block_, debug)),
        upstream_(upstream),
        debug_(debug) {}

  PoolResource(const PoolResource&) = delete;
  PoolResource& operator=(const PoolResource&) = delete;
  // A move takes the pools, the blocks upstream, used() and the name along: blocks handed out stay
  // valid, and are given back to the resource moved into. The one moved from is as after
  // release(), with its settings: empty, and usable. A pmr container keeps its resource's
  // address, so move a resource only while no container holds its blocks (or give the blocks
  // back through the resource moved into). Move assignment first gives back every block of the
  // target, as release() does.
  PoolResource(PoolResource&& other) noexcept
      : std::pmr::memory_resource(other),
        fast_pools_(other.fast_pools_),
        largest_block_(other.largest_block_),
        blocks_per_chunk_(other.blocks_per_chunk_),
        upstream_(other.upstream_),
        debug_(other.debug_) {
    take(other);
  }
  PoolResource& operator=(PoolResource&& other) noexcept {
    if (this != &other) {
      release();
      largest_block_ = other.largest_block_;
      blocks_per_chunk_ = other.blocks_per_chunk_;
      upstream_ = other.upstream_;
      debug_ = other.debug_;
      fast_pools_ = other.fast_pools_;
      take(other);
    }
    return *this;
  }
  ~PoolResource() override { release(); }

  // Gives back every block, pooled or upstream, whether or not it was deallocated, as
  // std::pmr::unsynchronized_pool_resource::release() does.
  void release() {
    for (std::size_t i = 0; i < pool_count(); ++i) {
      pools_[i].release();
      freed_[i] = {};
    }
    for (const UpstreamBlock& block : upstream_blocks_) {
      upstream_->deallocate(block.memory, block.bytes, block.alignment);
    }
    upstream_blocks_.clear();
    used_ = 0;
  }

  // Names the resource and its pools, for printing and reports.
  void set_name(const char* name) {
    name_.set(name);
    for (std::size_t i = 0; i < pool_count(); ++i) pools_[i].set_name(name_.c_str());
  }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  // Bytes asked for and not yet given back, pooled and upstream: a 3-byte request counts 3,
  // though it takes a 16-byte block (allocate(3) asks for alignof(std::max_align_t)).
  [[nodiscard]] std::size_t used() const { return used_; }
  // Bytes the resource holds: the blocks of its pools, in use or free (their chunks stay until
  // release()), and the requests upstream. Debug checks' guard bytes are not counted.
  [[nodiscard]] std::size_t reserved() const {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < pool_count(); ++i) {
      bytes += pools_[i].capacity() * pools_[i].block_size();
    }
    for (const UpstreamBlock& block : upstream_blocks_) bytes += block.bytes;
    return bytes;
  }
  [[nodiscard]] bool debug_checks() const { return debug_ == DebugChecks::on; }
  [[nodiscard]] std::size_t largest_block() const { return largest_block_; }
  [[nodiscard]] std::pmr::memory_resource* upstream() const { return upstream_; }

  // `PoolResource "ui": 514 B used, 17665 B reserved, 16 B blocks 1 of 64, 256 B blocks 1 of 64,
  // 1 block upstream, debug checks off`: each block size in use, smallest first, its blocks used
  // of those the resource holds. A power of two up to kLargestStep has two pools (the step's, and
  // the one for larger alignments and for 0 bytes): one entry for both.
  friend std::ostream& operator<<(std::ostream& out, const PoolResource& resource) {
    return detail::write_line(out, [&resource](std::ostream& line) {
      detail::write_title(line, "PoolResource", resource.name(), &resource)
          << ": " << resource.used() << " B used, " << resource.reserved() << " B reserved";
      for (std::size_t i = 0; i < resource.pool_count(); ++i) {
        const std::size_t size = block_size_of(i);
        if (i >= kStepPools && size <= kLargestStep) continue;  // with the step pool of its size
        std::size_t used = resource.blocks_used(i);
        std::size_t held = resource.pools_[i].capacity();
        const std::size_t twin =
            kStepPools + static_cast<std::size_t>(std::countr_zero(size / kSmallestBlock));
        if (i < kStepPools && std::has_single_bit(size) && twin < resource.pool_count()) {
          used += resource.blocks_used(twin);
          held += resource.pools_[twin].capacity();
        }
        if (held > 0) line << ", " << size << " B blocks " << used << " of " << held;
      }
      const std::size_t upstream = resource.upstream_blocks_.size();
      line << ", " << upstream << (upstream == 1 ? " block" : " blocks")
           << " upstream, debug checks " << (resource.debug_checks() ? "on" : "off");
    });
  }

 private:
  struct UpstreamBlock {
    void* memory;
    std::size_t bytes;
    std::size_t alignment;
  };

  // The move's blocks and figures; other is left as after release().
  void take(PoolResource& other) noexcept {
    for (std::size_t i = 0; i < pool_count(); ++i) {
      pools_[i] = std::move(other.pools_[i]);
      freed_[i] = std::exchange(other.freed_[i], {});
    }
    upstream_blocks_ = std::move(other.upstream_blocks_);
    other.upstream_blocks_.clear();
    used_ = std::exchange(other.used_, 0);
    name_ = other.name_;
  }

  static std::size_t rounded_largest_block(std::size_t largest_block) {
    return std::bit_ceil(std::clamp(largest_block, kSmallestBlock, kLargestBlockLimit));
  }

  // The pool of the largest blocks has the largest chunks: if its first chunk is within the
  // limit, every pool's is.
  static std::size_t checked_blocks_per_chunk(std::size_t blocks, std::size_t largest_block,
                                              DebugChecks debug) {
    if (blocks == 0) {
      detail::throw_or_abort<std::invalid_argument>(
          "poolalloc::PoolResource: blocks_per_chunk is 0");
    }
    if (blocks > FixedPool::max_blocks_per_chunk(largest_block, largest_block, debug)) {
      detail::throw_or_abort<std::length_error>(
          "poolalloc::PoolResource: blocks_per_chunk makes chunks over 4 GiB");
    }
    return blocks;
  }

  // pools_[0, kStepPools) hold blocks of 8, 16, ... kLargestStep bytes; pools_[kStepPools + i]
  // blocks of kSmallestBlock << i bytes, aligned to that size, which serve any alignment up to it.
  static constexpr std::size_t kStepPools = kLargestStep / kSmallestBlock;
  static std::size_t pool_index(std::size_t bytes, std::size_t alignment) {
    if (bytes - 1 < kLargestStep && alignment <= kStepAlignment) {
      return step_index(bytes, alignment);
    }
    return kStepPools +
           static_cast<std::size_t>(std::countr_zero(
               std::bit_ceil(std::max({bytes, alignment, kSmallestBlock})) / kSmallestBlock));
  }
  // For an alignment of at most kStepAlignment: the request's last byte rounded up to the step (8,
  // or 16 where it asks for 16: alignment / 2 adds the bit that rounds to 16), in steps of 8; at
  // least kStepPools for more than kLargestStep bytes, and for 0 bytes, which wraps round (and
  // takes the smallest power of two).
  static std::size_t step_index(std::size_t bytes, std::size_t alignment) {
    return ((bytes - 1) | (alignment / 2) | (kSmallestBlock - 1)) / kSmallestBlock;
  }
  static std::size_t block_size_of(std::size_t index) {
    return index < kStepPools ? (index + 1) * kSmallestBlock
                              : kSmallestBlock << (index - kStepPools);
  }
  static std::size_t alignment_of(std::size_t index) {
    const std::size_t block = block_size_of(index);
    return index >= kStepPools           ? block
           : block % kStepAlignment == 0 ? kStepAlignment
                                         : kSmallestBlock;
  }
  // The blocks of pool `index` handed out and not given back (those waiting on its stack of freed
  // blocks count as given back).
  [[nodiscard]] std::size_t blocks_used(std::size_t index) const {
    return pools_[index].used_count() - freed_[index].count;
  }
  [[nodiscard]] std::size_t pool_count() const {
    return kStepPools +
           static_cast<std::size_t>(std::countr_zero(largest_block_ / kSmallestBlock)) + 1;
  }

  // Without debug checks, the blocks given back to a pool wait on a stack of the resource's own,
  // linked through their first 8 bytes (a block has at least 8), and are handed out again from
  // there, last in first out: a deallocate is a push, as on foonathan's node pool. The pool's own
  // deallocate of a block outside its current chunk finds the chunk through its map from address
  // to chunk (a granule's hash and probe, the block check, that chunk's list: some 60
  // instructions, for nearly every free of a pmr container grown over several chunks). The pool
  // then hands out only blocks never handed out before. So, without debug checks, the resource
  // checks no pointer given back (nor do the standard's pool resources: a memory_resource is
  // given back only what it handed out) but against the top of its stack (give_back()); with
  // them, every block goes back to its pool, which checks it and keeps it.
  struct FreedBlocks {
    void* top = nullptr;
    std::size_t count = 0;  // for the pool's blocks in use: its own count less these
  };

  // The step pools that the fast paths serve: those of blocks up to the largest block (all 16
  // unless it is under kLargestStep), and none with debug checks, whose pools check every block
  // given back. One compare with it so stands for the largest block and the debug checks.
  static std::size_t fast_pools_of(std::size_t largest_block, DebugChecks debug) {
    return debug == DebugChecks::on ? 0 : std::min(largest_block, kLargestStep) / kSmallestBlock;
  }

  // The fast path, a request for a step pool (at most kLargestStep bytes, aligned to at most
  // kStepAlignment) without debug checks: the step's index, one compare, a pop from its stack of
  // freed blocks, the count and used(). Everything else is out of line, so that it saves no
  // register. Where 10,000 blocks of 16 bytes are allocated through a memory_resource pointer,
  // then deallocated in a random order, an allocate and deallocate pair measures 63 instructions
  // under callgrind, the loop's own and the virtual calls included (g++ 12, Release; 193 when
  // every block went back to its pool, 62 before give_back() compared a block with the top):
  // tests/toolkit/pair_instructions.sh holds it.
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment <= kStepAlignment) [[likely]] {
      const std::size_t index = step_index(bytes, alignment);
      // index % kStepPools is index, fast_pools_ being at most kStepPools: it tells the
      // compiler so, where a request of a constant size is inlined.
      if (index < fast_pools_) [[likely]]
        return take_freed(index % kStepPools, bytes);
    }
    return allocate_slowly(bytes, alignment);
  }

  // A block of pool `index` for a request of `bytes`: the one on top of its stack, else one from
  // the pool.
  void* take_freed(std::size_t index, std::size_t bytes) {
    FreedBlocks& freed = freed_[index];
    void* p = freed.top;
    if (p == nullptr) [[unlikely]]
      return allocate_from_pool(index, bytes);
    std::memcpy(&freed.top, p, sizeof freed.top);
    --freed.count;
    used_ += bytes;
    return p;
  }

  [[POOLALLOC_NOINLINE]] void* allocate_slowly(std::size_t bytes, std::size_t alignment) {
    if (bytes > largest_block_ || alignment > largest_block_) {
      return allocate_upstream(bytes, alignment);
    }
    return take_freed(pool_index(bytes, alignment), bytes);
  }

  // A block from the pool itself, created on first use.
  [[POOLALLOC_NOINLINE]] void* allocate_from_pool(std::size_t index, std::size_t bytes) {
    FixedPool& pool = pools_[index];
    void* p = pool.allocate();
    if (p == nullptr) [[unlikely]] {
      if (pool.capacity() == 0) {
        pool.create(block_size_of(index), blocks_per_chunk_, alignment_of(index), Growth::growable,
                    debug_);
        pool.set_name(name_.c_str());
      }
      p = pool.allocate();
      if (p == nullptr) {
        detail::throw_or_abort<std::bad_alloc>(
            "poolalloc::PoolResource: out of memory for a block");
      }
    }
    used_ += bytes;
    return p;
  }

  [[POOLALLOC_NOINLINE]] void* allocate_upstream(std::size_t bytes, std::size_t alignment) {
    // The record first: where it cannot be kept, no block has been taken that would leak.
    upstream_blocks_.push_back({nullptr, bytes, alignment});
    void* p = detail::undo_on_throw([&] { return upstream_->allocate(bytes, alignment); },
                                    [&] { upstream_blocks_.pop_back(); });
    upstream_blocks_.back().memory = p;
    used_ += bytes;
    return p;
  }

  // The fast path, as do_allocate's: the step's index, one compare, a push on its stack of freed
  // blocks, the count and used().
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (alignment <= kStepAlignment) [[likely]] {
      const std::size_t index = step_index(bytes, alignment);
      if (index < fast_pools_) [[likely]]
        return give_back(p, index % kStepPools, bytes);  // as do_allocate's
    }
    deallocate_slowly(p, bytes, alignment);
  }

  void give_back(void* p, std::size_t index, std::size_t bytes) {
    FreedBlocks& freed = freed_[index];
    // The block on top, given back again: a double free, caught by one compare as glibc's fast
    // bins catch it (one given back before another of its size is not).
    if (p == freed.top) [[unlikely]]
      fail_double_deallocate(p, index);
    std::memcpy(p, &freed.top, sizeof freed.top);
    freed.top = p;
    ++freed.count;
    used_ -= bytes;
  }

  [[POOLALLOC_NOINLINE]] void deallocate_slowly(void* p, std::size_t bytes, std::size_t alignment) {
    if (bytes > largest_block_ || alignment > largest_block_) {
      return deallocate_upstream(p, bytes, alignment);
    }
    const std::size_t index = pool_index(bytes, alignment);
    if (debug_ == DebugChecks::off) return give_back(p, index, bytes);
    pools_[index].deallocate(p);
    used_ -= bytes;
  }

  [[nodiscard]] detail::Message describe() const {
    detail::Message message;
    message << "poolalloc: ";
    detail::write_title(message, "PoolResource", name(), this) << ": deallocate of ";
    return message;
  }
  [[noreturn, POOLALLOC_COLD]] void fail_double_deallocate(const void* p, std::size_t index) const {
    detail::Message message = describe();
    message << p << ", the " << block_size_of(index)
            << "-byte block given back last: a double free";
    detail::fatal(message);
  }
  [[noreturn, POOLALLOC_COLD]] void fail_deallocate_upstream(const void* p) const {
    detail::Message message = describe();
    message << p << ", above the largest block, which it did not hand out or has taken back "
            << "(a double free)";
    detail::fatal(message);
  }

  [[POOLALLOC_NOINLINE]] void deallocate_upstream(void* p, std::size_t bytes,
                                                  std::size_t alignment) {
    forget_upstream_block(p);
    upstream_->deallocate(p, bytes, alignment);
    used_ -= bytes;
  }

  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  // O(blocks upstream): requests above the largest block are expected to be few. A block not
  // among them (given back twice, or never handed out here) is reported: upstream would take it
  // as its own.
  void forget_upstream_block(void* p) {
    const auto block = std::find_if(upstream_blocks_.begin(), upstream_blocks_.end(),
                                    [p](const UpstreamBlock& b) { return b.memory == p; });
    if (block == upstream_blocks_.end()) [[unlikely]]
      fail_deallocate_upstream(p);
    *block = upstream_blocks_.back();
    upstream_blocks_.pop_back();
  }

  static constexpr std::size_t kPools =
      kStepPools + std::countr_zero(kLargestBlockLimit / kSmallestBlock) + 1;
  // What the fast paths read first, so that with the pointer to the virtual functions it lies in
  // the resource's first two cache lines: a line fewer a call than after the pools, for
  // containers whose nodes push the resource out of the caches between calls (a pmr map).
  std::size_t fast_pools_;  // see fast_pools_of()
  std::size_t used_ = 0;
  FreedBlocks freed_[kPools];  // see FreedBlocks
  std::size_t largest_block_;
  std::size_t blocks_per_chunk_;
  std::pmr::memory_resource* upstream_;
  DebugChecks debug_;
  // See pool_index(). In the resource, so that constructing it takes no memory: it cannot fail
  // for want of some.
  FixedPool pools_[kPools];
  std::vector<UpstreamBlock> upstream_blocks_;  // to give back on release()
  detail::Name name_;
};

// A PoolResource behind a lock, as std::pmr::synchronized_pool_resource is an
// unsynchronized_pool_resource behind one: a memory_resource that pmr containers on several
// threads may share. with_lock(f) reaches the resource's queries and release().
using SynchronizedPoolResource = Synchronized<PoolResource>;

// A memory_resource over an arena with allocate(size, align) that returns nullptr when full.
template <class Arena>
class ArenaResource : public std::pmr::memory_resource {
 public:
  explicit ArenaResource(Arena& arena) : arena_(arena) {}
  [[nodiscard]] Arena& arena() const { return arena_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) final {
    if (void* p = arena_.allocate(bytes, alignment)) return p;
    detail::throw_or_abort<std::bad_alloc>(
        "poolalloc::ArenaResource (FrameResource, StackResource): its arena is full");
  }
  void do_deallocate(void*, std::size_t, std::size_t) final {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept final {
    return this == &other;
  }

  Arena& arena_;
};

// `FrameResource per_frame(frame)` over a FrameAllocator or a DoubleBufferedFrameAllocator: the
// frame's type is deduced (a class template, not an alias, so that clang 14 deduces it too).
template <class Frame = FrameAllocator>
class FrameResource final : public ArenaResource<Frame> {
 public:
  explicit FrameResource(Frame& frame) : ArenaResource<Frame>(frame) {}
};

using StackResource = ArenaResource<StackAllocator>;

template <class T, class Arena>
class StlAllocator {
 public:
  using value_type = T;

  explicit StlAllocator(Arena& arena) noexcept : arena_(&arena) {}
  template <class U>
  StlAllocator(const StlAllocator<U, Arena>& other) noexcept : arena_(&other.arena()) {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if constexpr (kFixedSize) {
      if (n == 1 && sizeof(T) <= arena_->block_size() && alignof(T) <= arena_->alignment()) {
        if (void* p = arena_->allocate()) return static_cast<T*>(p);
      }
    } else {
      if (n > SIZE_MAX / sizeof(T)) {
        detail::throw_or_abort<std::bad_array_new_length>(
            "poolalloc::StlAllocator: the size overflows");
      }
      if (void* p = arena_->allocate(n * sizeof(T), alignof(T))) return static_cast<T*>(p);
    }
    detail::throw_or_abort<std::bad_alloc>(
        "poolalloc::StlAllocator: its arena cannot serve the request");
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (kFixedSize) {
      arena_->deallocate(p);
    } else if constexpr (requires { arena_->deallocate(p, n * sizeof(T), alignof(T)); }) {
      arena_->deallocate(p, n * sizeof(T), alignof(T));
    }
  }

  [[nodiscard]] Arena& arena() const noexcept { return *arena_; }

  template <class U>
  bool operator==(const StlAllocator<U, Arena>& other) const noexcept {
    return arena_ == &other.arena();
  }

 private:
  // A pool of blocks of one size (FixedPool, or a Tracked or Synchronized one, which forward its
  // block_size() and alignment()), whose allocate() takes no size: it serves one T at a time,
  // that a block holds.
  static constexpr bool kFixedSize = requires(Arena & arena) { arena.allocate(); };

  Arena* arena_;
};

}  // namespace poolalloc
