// FixedPool: the fixed-size block pool of Kenwright's "Fast Efficient Fixed-Size Memory Pool".
//
// - O(1) creation: no block is touched until it is handed out (detail::LazyBlockList), so a pool
//   of 10 M blocks is created as fast as one of 1 K.
// - O(1) allocate and deallocate; blocks are at least 4 bytes, because a free block holds the
//   4-byte index of the next one.
// - Growth chains chunks and never moves a block: grow() adds one on request, and a growable pool
//   adds one when full, each as large as the whole pool so far (capacity doubles). With several
//   chunks, deallocate stays O(1) whatever the chunk of the block (detail::ChunkMap finds it), and
//   allocate is O(1) amortised (a list of the chunks with room). The fast paths are those of the
//   chunk used last.
// - Always on, because it is cheap (one multiply, a rotate and a compare): deallocate of a
//   pointer outside the pool or not on a block boundary is reported and aborts.
// - Debug checks (POOLALLOC_DEBUG, or DebugChecks::on): double-free detection, fill patterns
//   (detail/debug_blocks.hpp), a leak list on destroy(), and guard bytes around every block of a
//   chunk that the pool allocates. Chunks of caller memory (create over a buffer, grow with
//   memory) get no guard bytes, so that debug checks never change how many blocks a buffer
//   holds. Without debug checks they cost nothing: a pool with them keeps no current chunk's
//   list, so that its every call misses the fast path and takes the checked one.
//
// Not thread-safe, by choice: use one pool per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <ostream>
#include <string_view>
#include <utility>
#include <vector>

#include "debug_checks.hpp"
#include "detail/block_layout.hpp"
#include "detail/chunk_map.hpp"
#include "detail/cold.hpp"
#include "detail/debug_blocks.hpp"
#include "detail/exceptions.hpp"
#include "detail/lazy_block_list.hpp"
#include "detail/message.hpp"
#include "detail/name.hpp"
#include "detail/printing.hpp"

namespace poolalloc {

// Whether a pool grows when it is full, and a growable Pool<T>'s memory: `growable` keeps its
// slots in address space it reserves from the system and grows them in place while they fit
// (detail/address_range.hpp; chunks from operator new past that, or where there is none), so that a
// grown pool resolves a handle as fast as one created at full size; `growable_from_new` takes every
// chunk from operator new (a replaced one sees it). A FixedPool's chunks come from operator new
// under either.
enum class Growth { fixed, growable, growable_from_new };

// What a pool with debug checks reports of the blocks (objects, for Pool<T>) still live when it is
// destroyed (set_leak_report): nothing; a line for each of the first kLeakReportSummaryLines and
// the count (the default: a game that quits with thousands of live objects gets a few lines); or a
// line for each and the count.
enum class LeakReport { off, summary, per_object };
inline constexpr std::uint64_t kLeakReportSummaryLines = 8;

namespace detail {
// Whether the leak report lists the live block or object that comes after `listed` listed ones.
constexpr bool lists_leak(LeakReport report, std::uint64_t listed) {
  return report == LeakReport::per_object ||
         (report == LeakReport::summary && listed < kLeakReportSummaryLines);
}

// Ends the count line of a leak report, saying how many were listed where not all were, and
// writes it.
inline void write_leaks_listed(Message& message, LeakReport report, std::uint64_t leaked) {
  if (!lists_leak(report, leaked - 1))
    message << " (the first " << kLeakReportSummaryLines << " listed)";
  message << "\n";
  message.write_to_stderr();
}
}  // namespace detail

class FixedPool {
 public:
  FixedPool() = default;
  // Check capacity() for failure (the same arguments that make create() return false).
  FixedPool(std::size_t block_size, std::size_t block_count,
            std::size_t alignment = alignof(std::max_align_t), Growth growth = Growth::fixed,
            DebugChecks debug = kDefaultDebugChecks) {
    create(block_size, block_count, alignment, growth, debug);
  }
  FixedPool(const FixedPool&) = delete;
  FixedPool& operator=(const FixedPool&) = delete;
  // A move takes the blocks, the memory, the figures, the name and the leak report along: blocks
  // handed out stay valid, and go back to the pool moved into. The pool moved from is as after
  // release(): empty (capacity 0, allocate nullptr) until created again. Move assignment first
  // destroys what the pool held, as destroy() does (the leak list under debug checks).
  FixedPool(FixedPool&& other) noexcept { take(other); }
  FixedPool& operator=(FixedPool&& other) noexcept {
    if (this != &other) {
      destroy();
      take(other);
    }
    return *this;
  }
  ~FixedPool() { destroy(); }

  // Over memory the pool allocates. False (and an empty pool) for a zero size or count, an
  // alignment that is not a power of two, a chunk over 4 GiB, or no memory.
  bool create(std::size_t block_size, std::size_t block_count,
              std::size_t alignment = alignof(std::max_align_t), Growth growth = Growth::fixed,
              DebugChecks debug = kDefaultDebugChecks) {
    destroy();
    if (configure(block_size, alignment, growth, debug) && add_owned_chunk(block_count)) {
      return true;
    }
    destroy();
    return false;
  }

  // Over the caller's memory, which the pool uses as many whole aligned blocks as fit in (up to
  // max_blocks_per_chunk) and never frees. False when not even one block fits.
  bool create(void* buffer, std::size_t buffer_bytes, std::size_t block_size, std::size_t alignment,
              Growth growth = Growth::fixed, DebugChecks debug = kDefaultDebugChecks) {
    destroy();
    if (configure(block_size, alignment, growth, debug) && add_caller_chunk(buffer, buffer_bytes)) {
      return true;
    }
    destroy();
    return false;
  }

  // Frees the memory the pool allocated; with debug checks, first lists every live block.
  void destroy() {
    if (debug_) report_leaks();
    release();
  }

  // Gives back every block at once, live or not, and the memory the pool allocated: the pool is
  // empty until created again. Reports nothing.
  void release() {
    for (const Chunk& chunk : chunks_) free_chunk(chunk);
    chunks_.clear();
    chunk_map_.release();
    with_room_.clear();
    current_ = {};
    current_index_ = last_freed_ = kNoChunk;
    owned_layout_ = caller_layout_ = {};
    alignment_ = 1;
    capacity_ = used_elsewhere_ = peak_used_ = current_peak_ = 0;
    growth_ = Growth::fixed;
    debug_ = false;
  }

  // nullptr when the pool is full and cannot grow. The fast path (no debug checks, the chunk
  // used last serves): a free list's head and its link, two stores (the head, the lists' count),
  // the peak's compare (detail::LazyBlockList: the free blocks are kept on 8 lists, so that a
  // miss on one link holds up only every 8th allocation). An allocate/deallocate pair in a loop
  // measures 39 instructions under callgrind, the loop's own included (g++ 12, Release):
  // tests/toolkit/pair_instructions.sh holds it.
  [[nodiscard]] void* allocate() {
    if (void* block = current_.allocate()) [[likely]] {
      note_allocated();
      return block;
    }
    return debug_ ? allocate_checked() : allocate_from_another_chunk();
  }

  // nullptr is ignored; anything else not allocated here is reported and aborts.
  void deallocate(void* block) {
    deallocate(block, [](void*) {});
  }

  // Verifies `block`, calls before_free(block), then frees it. Pool<T> runs the destructor there,
  // so that a bad pointer is reported before a destructor runs on it. The fast path: the check
  // that a block of the current chunk starts there (LazyBlockList::holds_block; nullptr fails
  // it, and is tested only then), then three stores: the link, the list's head, the count.
  template <class BeforeFree>
  void deallocate(void* block, BeforeFree&& before_free) {
    if (!current_.holds_block(block)) [[unlikely]] {
      if (block == nullptr) return;  // tested here, off the fast path
      if (debug_) return deallocate_checked(block, before_free);
      return deallocate_elsewhere(block, before_free);
    }
    before_free(block);
    current_.deallocate(block);
  }

  // The most blocks that one chunk of the pool's own memory holds (create(), grow(n)): a chunk
  // stays under 4 GiB. 0 for a block size or alignment that create() refuses.
  [[nodiscard]] static std::size_t max_blocks_per_chunk(
      std::size_t block_size, std::size_t alignment = alignof(std::max_align_t),
      DebugChecks debug = kDefaultDebugChecks) {
    const auto layout = detail::block_layout(block_size, alignment, debug == DebugChecks::on);
    return layout ? max_blocks_per_chunk(*layout) : 0;
  }

  // Adds a chunk of extra_blocks blocks. Live blocks stay where they are. False, and the pool
  // unchanged, without the memory.
  bool grow(std::size_t extra_blocks) { return !chunks_.empty() && add_owned_chunk(extra_blocks); }

  // Adds the caller's memory. Memory that starts where an earlier caller buffer ended extends
  // that chunk in place, as the paper's resizing does; other memory becomes a new chunk. False,
  // and the pool unchanged, for memory that shares a byte with the pool's (its chunks, or a
  // buffer given before, alignment padding included) and for memory that adds no block (with
  // the bytes left over at the end of the chunk it extends). Refused memory stays the caller's
  // and the pool keeps no note of it: memory given later that starts where it ends does not
  // extend a chunk. O(chunks).
  bool grow(void* memory, std::size_t bytes) {
    if (chunks_.empty() || memory == nullptr || overlaps_a_chunk(memory, bytes)) return false;
    for (Chunk& chunk : chunks_) {
      if (chunk.owned || chunk.end != memory) continue;
      detail::LazyBlockList& blocks = blocks_of(chunk);
      const std::size_t room = max_blocks_per_chunk(caller_layout_) - blocks.block_count();
      const std::size_t unused = static_cast<std::size_t>(chunk.end - end_of_blocks(chunk));
      const std::size_t extra = std::min((unused + bytes) / caller_layout_.stride, room);
      if (extra == 0) break;
      const bool reserved = detail::returns_without_bad_alloc([&] {
        chunk_map_.reserve(chunk.end, chunk.end + bytes);
        if (debug_) chunk.allocated.resize(blocks.block_count() + extra);
      });
      if (!reserved) return false;
      blocks.extend(static_cast<std::uint32_t>(extra));
      chunk_map_.insert(chunk.end, chunk.end + bytes, index_of(chunk));
      chunk.end += bytes;
      capacity_ += extra;
      return true;
    }
    return add_caller_chunk(memory, bytes);
  }

  // The paper's resizing down: gives back the trailing chunks, all but the first, that hold no
  // live block (owned memory is freed, caller memory is the caller's again) and returns their
  // bytes: all that was allocated, or all that create() and grow() were given, the bytes skipped
  // to align a buffer included. It stops at the last chunk with a live block. O(chunks + capacity
  // / the first chunk's blocks): the chunks kept are entered in chunk_map_ again.
  std::size_t shrink() {
    std::size_t released = 0;
    while (chunks_.size() > 1 && blocks_of(chunks_.back()).empty()) {
      if (current_index_ == chunks_.size() - 1) make_current(chunks_[current_index_ - 1]);
      const Chunk& chunk = chunks_.back();
      released += static_cast<std::size_t>(chunk.end - chunk.begin);
      capacity_ -= chunk.blocks.block_count();
      free_chunk(chunk);
      chunks_.pop_back();
    }
    if (released != 0) {
      if (last_freed_ >= chunks_.size()) last_freed_ = kNoChunk;
      std::erase_if(with_room_, [this](std::uint32_t chunk) { return chunk >= chunks_.size(); });
      chunk_map_.clear();
      for (const Chunk& chunk : chunks_) chunk_map_.insert(chunk.begin, chunk.end, index_of(chunk));
    }
    return released;
  }

  // Copied (up to 31 bytes, cut at a UTF-8 character boundary); reports and printing show it
  // instead of the pool's address.
  void set_name(const char* name) { name_.set(name); }
  [[nodiscard]] std::string_view name() const { return name_.view(); }

  // Kept by release() and create(), as the name.
  void set_leak_report(LeakReport report) { leak_report_ = report; }
  [[nodiscard]] LeakReport leak_report() const { return leak_report_; }

  [[nodiscard]] std::size_t block_size() const { return owned_layout_.payload; }
  [[nodiscard]] std::size_t alignment() const { return alignment_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t free_count() const { return capacity_ - used_count(); }
  [[nodiscard]] std::size_t used_count() const { return used_elsewhere_ + current_.used_count(); }
  [[nodiscard]] std::size_t peak_used() const {
    return std::max(peak_used_, used_elsewhere_ + current_peak_);
  }
  [[nodiscard]] std::size_t chunk_count() const { return chunks_.size(); }
  [[nodiscard]] bool debug_checks() const { return debug_; }

  // True when p points into the bytes of one of the pool's blocks, live or free: not into guard
  // bytes, nor into the padding that the alignment leaves between blocks. O(chunks).
  [[nodiscard]] bool owns(const void* p) const {
    const auto* byte = static_cast<const std::byte*>(p);
    return std::any_of(chunks_.begin(), chunks_.end(), [this, byte](const Chunk& chunk) {
      const detail::LazyBlockList& blocks = blocks_of(chunk);
      if (!holds(chunk, byte)) return false;
      const std::byte* block = blocks.block_at(blocks.index_of(byte));
      return static_cast<std::size_t>(byte - block) < block_size();
    });
  }

  // Checks every chunk's free list and, with debug checks, every guard byte and that no freed
  // block was written to. Reports the first fault and aborts. O(blocks handed out so far).
  void verify() const {
    for (const Chunk& chunk : chunks_) {
      if (debug_) {
        for (std::uint32_t i = 0; i < chunk.guarded; ++i) {
          const std::byte* block = chunk.blocks.block_at(i);
          chunk.allocated.test(i) ? check_guards(chunk, block) : check_free_block(chunk, block);
        }
      }
      if (!blocks_of(chunk).free_list_is_consistent()) fail("free list corrupted");
    }
  }

 private:
  struct Chunk {
    detail::LazyBlockList blocks;
    std::byte* begin = nullptr;   // the memory as allocated or given, alignment padding included
    std::byte* memory = nullptr;  // the first block's front guard
    std::byte* end = nullptr;     // end of the memory the chunk may use
    bool owned = false;           // allocated by the pool, rather than given by the caller
    bool with_room = false;       // on with_room_
    // Debug checks only:
    detail::AllocationBits allocated;
    std::uint32_t guarded = 0;  // blocks [0, guarded) have had their guard bytes written
  };

  // The move: this pool, empty, takes all of other's, and other is left as after release().
  void take(FixedPool& other) noexcept {
    chunks_ = std::move(other.chunks_);
    other.chunks_.clear();
    chunk_map_ = std::move(other.chunk_map_);
    with_room_ = std::move(other.with_room_);
    other.with_room_.clear();
    current_ = other.current_;
    current_index_ = other.current_index_;
    last_freed_ = other.last_freed_;
    owned_layout_ = other.owned_layout_;
    caller_layout_ = other.caller_layout_;
    alignment_ = other.alignment_;
    capacity_ = other.capacity_;
    used_elsewhere_ = other.used_elsewhere_;
    peak_used_ = other.peak_used_;
    current_peak_ = other.current_peak_;
    growth_ = other.growth_;
    debug_ = other.debug_;
    leak_report_ = other.leak_report_;
    name_ = other.name_;
    other.release();
  }

  bool configure(std::size_t block_size, std::size_t alignment, Growth growth, DebugChecks debug) {
    const auto owned = detail::block_layout(block_size, alignment, debug == DebugChecks::on);
    const auto caller = detail::block_layout(block_size, alignment, false);
    if (!owned || !caller || owned->stride > UINT32_MAX) return false;
    owned_layout_ = *owned;
    caller_layout_ = *caller;
    alignment_ = alignment;
    growth_ = growth;
    debug_ = debug == DebugChecks::on;
    return true;
  }

  void free_chunk(const Chunk& chunk) const {
    if (chunk.owned) ::operator delete (chunk.begin, std::align_val_t{alignment_});
  }

  [[nodiscard]] const detail::BlockLayout& layout_of(const Chunk& chunk) const {
    return chunk.owned ? owned_layout_ : caller_layout_;
  }

  // 0 before create() has set the layouts.
  [[nodiscard]] static std::size_t max_blocks_per_chunk(const detail::BlockLayout& layout) {
    return layout.stride == 0 ? 0 : UINT32_MAX / layout.stride;
  }

  bool add_owned_chunk(std::size_t block_count) {
    if (block_count == 0 || block_count > max_blocks_per_chunk(owned_layout_)) return false;
    const std::size_t bytes = block_count * owned_layout_.stride;
    void* memory = ::operator new (bytes, std::align_val_t{alignment_}, std::nothrow);
    if (memory == nullptr) return false;
    auto* begin = static_cast<std::byte*>(memory);
    if (add_chunk(begin, 0, begin + bytes, block_count, true)) return true;
    ::operator delete (memory, std::align_val_t{alignment_});
    return false;
  }

  bool add_caller_chunk(void* buffer, std::size_t bytes) {
    if (buffer == nullptr) return false;
    const std::size_t padding = detail::padding_to_align(buffer, alignment_);
    if (bytes < padding) return false;
    const std::size_t count =
        std::min((bytes - padding) / caller_layout_.stride, max_blocks_per_chunk(caller_layout_));
    if (count == 0) return false;
    auto* begin = static_cast<std::byte*>(buffer);
    return add_chunk(begin, padding, begin + bytes, count, false);
  }

  // All or nothing: false, and the pool as it was, when the chunk list or the debug bits cannot
  // have their memory.
  bool add_chunk(std::byte* begin, std::size_t padding, std::byte* end, std::size_t block_count,
                 bool owned) {
    Chunk chunk;
    chunk.owned = owned;
    const detail::BlockLayout& layout = layout_of(chunk);
    chunk.begin = begin;
    chunk.memory = begin + padding;
    chunk.end = end;
    chunk.blocks = detail::LazyBlockList(chunk.memory + layout.front_guard,
                                         static_cast<std::uint32_t>(layout.stride),
                                         static_cast<std::uint32_t>(block_count));
    if (chunks_.empty()) chunk_map_.set_granule(static_cast<std::size_t>(end - begin));
    const bool reserved = detail::returns_without_bad_alloc([&] {
      chunks_.reserve(chunks_.size() + 1);
      with_room_.reserve(chunks_.size() + 1);  // so that listing a chunk never allocates
      chunk_map_.reserve(begin, end);
      if (debug_) chunk.allocated.resize(block_count);
    });
    if (!reserved) return false;
    chunk_map_.insert(begin, end, static_cast<std::uint32_t>(chunks_.size()));
    chunks_.push_back(std::move(chunk));
    list_with_room(chunks_.back());
    capacity_ += block_count;
    make_current(chunks_.back());
    return true;
  }

  // The list of the current chunk lives in the pool (current_), where the fast paths reach it
  // without a pointer to follow, and its Chunk's copy is stale until another chunk becomes the
  // current one. Pools with debug checks keep current_ empty and their chunks' lists up to date.
  // The pool's count of blocks in use is the current list's plus the other chunks' sum
  // (used_elsewhere_), which changes only where a chunk stops or starts being the current one and
  // where a block goes back to another chunk (deallocate_elsewhere), so that the fast paths store
  // no count of their own. The peak is the larger of the peak when the current chunk became current
  // (peak_used_) and that sum plus the current list's highest count since then (current_peak_). A
  // pool with debug checks counts every chunk in used_elsewhere_ and keeps its peak in peak_used_.
  static constexpr std::size_t kNoChunk = SIZE_MAX;
  static constexpr detail::LazyBlockList kNoList{};

  [[nodiscard]] bool is_current(const Chunk& chunk) const {
    return !debug_ && static_cast<std::size_t>(&chunk - chunks_.data()) == current_index_;
  }
  [[nodiscard]] detail::LazyBlockList& blocks_of(Chunk& chunk) {
    return is_current(chunk) ? current_ : chunk.blocks;
  }
  [[nodiscard]] const detail::LazyBlockList& blocks_of(const Chunk& chunk) const {
    return is_current(chunk) ? current_ : chunk.blocks;
  }

  [[nodiscard]] std::uint32_t index_of(const Chunk& chunk) const {
    return static_cast<std::uint32_t>(&chunk - chunks_.data());
  }

  void make_current(Chunk& chunk) {
    const std::size_t index = index_of(chunk);
    if (index == current_index_) return;
    if (!debug_) {
      leave_current();
      current_ = chunk.blocks;
      used_elsewhere_ -= current_.used_count();
      current_peak_ = current_.used_count();
    }
    current_index_ = index;
  }

  // Puts the current list back in its chunk and leaves no chunk current (current_ empty, which
  // holds no block and hands out none, so that both fast paths miss). Not under debug checks.
  [[POOLALLOC_NOINLINE]] void leave_current() {
    if (current_index_ == kNoChunk) return;
    peak_used_ = peak_used();
    used_elsewhere_ += current_.used_count();
    if (!current_.full()) list_with_room(chunks_[current_index_]);
    chunks_[current_index_].blocks = current_;
    current_ = kNoList;  // a copy: cheaper than building an empty list
    current_peak_ = 0;
    current_index_ = kNoChunk;
  }

  // A block of another chunk than the current one goes on its own chunk's list, found in O(1)
  // (detail::ChunkMap), and no chunk stays current: the blocks that follow it, freed in a random
  // order over many chunks (a pmr map's nodes), each go to their own chunk's list, and none
  // switches the current list (two copies of it). The next allocation makes the chunk of the
  // block freed last the current one and takes that block, which is so still the next one handed
  // out.
  // Out of line, as the other slow paths, so that the fast paths inlined in a caller keep few
  // registers to save.
  template <class BeforeFree>
  [[POOLALLOC_NOINLINE]] void deallocate_elsewhere(void* block, BeforeFree& before_free) {
    if (current_index_ != kNoChunk) leave_current();  // every chunk's own list is up to date
    const std::uint32_t index = chunk_map_.find(block, [this, block](std::uint32_t chunk) {
      return chunks_[chunk].blocks.holds_block(block);
    });
    if (index == detail::ChunkMap::kNone) [[unlikely]]
      fail_deallocate_of(block);
    before_free(block);
    Chunk& chunk = chunks_[index];
    chunk.blocks.deallocate(block);
    if (!chunk.with_room) [[unlikely]]
      list_with_room(chunk);
    --used_elsewhere_;
    last_freed_ = index;
  }

  // Every chunk with a free block but the current one is on with_room_ (and some that filled up
  // since they were listed, which chunk_with_room() drops), once: its capacity is the number of
  // chunks, so that this never allocates.
  void list_with_room(Chunk& chunk) {
    if (chunk.with_room) return;
    chunk.with_room = true;
    with_room_.push_back(index_of(chunk));
  }

  // The memory starts inside a chunk, or a chunk starts inside the memory. Unsigned differences
  // wrap to a huge value where the address subtracted is the higher one, so neither test
  // overflows or needs an end address.
  [[nodiscard]] bool overlaps_a_chunk(const void* memory, std::size_t bytes) const {
    const auto start = reinterpret_cast<std::uintptr_t>(memory);
    return std::any_of(chunks_.begin(), chunks_.end(), [start, bytes](const Chunk& chunk) {
      const auto begin = reinterpret_cast<std::uintptr_t>(chunk.begin);
      const auto end = reinterpret_cast<std::uintptr_t>(chunk.end);
      return start - begin < end - begin || begin - start < bytes;
    });
  }

  [[nodiscard]] const std::byte* end_of_blocks(const Chunk& chunk) const {
    return chunk.memory + std::size_t{blocks_of(chunk).block_count()} * layout_of(chunk).stride;
  }

  // A load and a compare: the other chunks' count stays put while the current chunk serves, so
  // the peak grows where the current list's count passes its highest since then. A branch rather
  // than a max: once that is reached, allocations stop storing it.
  void note_allocated() {
    if (current_.used_count() > current_peak_) [[unlikely]]
      current_peak_ = current_.used_count();
  }

  [[POOLALLOC_NOINLINE]] void* allocate_from_another_chunk() {
    Chunk* chunk = chunk_with_room();
    if (chunk == nullptr) return nullptr;
    make_current(*chunk);
    void* block = current_.allocate();
    note_allocated();
    return block;
  }

  // The chunk of the block freed last where no chunk is current (deallocate_elsewhere), else the
  // current chunk if it has a free block, else the one listed last of with_room_ that still has
  // one, else a new one where the pool may grow; nullptr when there is none. O(1) amortised: a
  // chunk is listed once each time it goes from full to having room.
  Chunk* chunk_with_room() {
    if (last_freed_ != kNoChunk) {
      Chunk& chunk = chunks_[std::exchange(last_freed_, kNoChunk)];
      if (!blocks_of(chunk).full()) return &chunk;
    }
    if (current_index_ != kNoChunk && !blocks_of(chunks_[current_index_]).full()) {
      return &chunks_[current_index_];
    }
    while (!with_room_.empty()) {
      Chunk& chunk = chunks_[with_room_.back()];
      if (!blocks_of(chunk).full()) return &chunk;
      chunk.with_room = false;  // full since it was listed
      with_room_.pop_back();
    }
    if (growth_ == Growth::fixed || chunks_.empty() ||
        !add_owned_chunk(std::min(capacity_, max_blocks_per_chunk(owned_layout_)))) {
      return nullptr;
    }
    return &chunks_.back();
  }

  // Whether p points into the chunk's blocks. Their list's range starts after the first block's
  // front guard and runs a stride per block from there, front_guard bytes past the chunk's end
  // (into memory that may be another chunk's): it is cut at the end.
  [[nodiscard]] bool holds(const Chunk& chunk, const void* p) const {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    const auto end = reinterpret_cast<std::uintptr_t>(chunk.end);
    return blocks_of(chunk).contains(p) && address < end;
  }

  // The chunk holding `block`; aborts when there is none. O(1): see detail::ChunkMap.
  Chunk& chunk_holding(const void* block) {
    const std::uint32_t index = chunk_map_.find(
        block, [this, block](std::uint32_t chunk) { return holds(chunks_[chunk], block); });
    if (index == detail::ChunkMap::kNone) fail_deallocate(block, " outside the pool");
    return chunks_[index];
  }

  // The chunk in which a block starts at `block`; aborts when there is none.
  Chunk& chunk_starting(const void* block) {
    Chunk& chunk = chunk_holding(block);
    if (!blocks_of(chunk).holds_block(block)) {
      fail_deallocate(block, " not on a block boundary");
    }
    return chunk;
  }

  [[POOLALLOC_NOINLINE]] void* allocate_checked() {
    Chunk* chunk_with_block = chunk_with_room();
    if (chunk_with_block == nullptr) return nullptr;
    Chunk& chunk = *chunk_with_block;
    make_current(chunk);
    auto* block = static_cast<std::byte*>(chunk.blocks.allocate());
    peak_used_ = std::max(peak_used_, ++used_elsewhere_);
    const std::uint32_t index = chunk.blocks.index_of(block);
    const detail::BlockLayout& layout = layout_of(chunk);
    if (index < chunk.guarded) {
      check_free_block(chunk, block);
    } else {
      detail::fill(block - layout.front_guard, layout.front_guard, detail::kGuardFill);
      detail::fill(block + layout.payload, layout.back_guard(), detail::kGuardFill);
      chunk.guarded = index + 1;
    }
    chunk.allocated.set(index);
    detail::fill(block, layout.payload, detail::kFreshFill);
    return block;
  }

  template <class BeforeFree>
  [[POOLALLOC_NOINLINE]] void deallocate_checked(void* block, BeforeFree& before_free) {
    Chunk& chunk = chunk_starting(block);
    make_current(chunk);
    const std::uint32_t index = chunk.blocks.index_of(block);
    if (!chunk.allocated.test(index)) {
      fail_deallocate(block, index < chunk.guarded ? ", which is already free (double free)"
                                                   : ", which was never allocated");
    }
    check_guards(chunk, static_cast<std::byte*>(block));
    before_free(block);
    detail::fill(static_cast<std::byte*>(block), block_size(), detail::kFreedFill);
    chunk.allocated.clear(index);
    chunk.blocks.deallocate(block);
    list_with_room(chunk);
    --used_elsewhere_;
  }

  // Of a chunk of caller memory, only the bytes that the stride's rounding leaves between
  // blocks (if any) are checked.
  void check_guards(const Chunk& chunk, const std::byte* block) const {
    const detail::BlockLayout& layout = layout_of(chunk);
    if (!detail::holds_only(block - layout.front_guard, layout.front_guard, detail::kGuardFill)) {
      fail_block(block, "guard bytes before block ", " overwritten");
    }
    if (!detail::holds_only(block + layout.payload, layout.back_guard(), detail::kGuardFill)) {
      fail_block(block, "guard bytes after block ", " overwritten");
    }
  }

  // A free block holds its 4-byte link, then the freed fill.
  void check_free_block(const Chunk& chunk, const std::byte* block) const {
    check_guards(chunk, block);
    const std::size_t link = detail::LazyBlockList::kMinBlockSize;
    if (!detail::holds_only(block + link, block_size() - link, detail::kFreedFill)) {
      fail_block(block, "block ", " written after it was freed");
    }
  }

  void report_leaks() const {
    if (leak_report_ == LeakReport::off) return;
    std::uint64_t leaked = 0;
    for (const Chunk& chunk : chunks_) {
      for (std::uint32_t i = 0; i < chunk.guarded; ++i) {
        if (!chunk.allocated.test(i)) continue;
        if (detail::lists_leak(leak_report_, leaked)) {
          detail::Message message = describe();
          message << "leaked block " << static_cast<const void*>(chunk.blocks.block_at(i)) << "\n";
          message.write_to_stderr();
        }
        ++leaked;
      }
    }
    if (leaked == 0) return;
    detail::Message message = describe();
    message << leaked << " blocks still allocated at destroy()";
    detail::write_leaks_listed(message, leak_report_, leaked);
  }

  [[nodiscard]] detail::Message describe() const {
    detail::Message message;
    message << "poolalloc: ";
    detail::write_title(message, "FixedPool", name(), this)
        << " (block " << block_size() << " B): ";
    return message;
  }

  [[noreturn, POOLALLOC_COLD]] void fail(std::string_view fault) const {
    detail::Message message = describe();
    message << fault;
    detail::fatal(message);
  }
  // A block that no chunk has: outside them all, or inside one but not where a block starts.
  [[noreturn, POOLALLOC_COLD]] void fail_deallocate_of(const void* block) const {
    const bool inside =
        std::any_of(chunks_.begin(), chunks_.end(),
                    [this, block](const Chunk& chunk) { return holds(chunk, block); });
    fail_deallocate(block, inside ? " not on a block boundary" : " outside the pool");
  }
  [[noreturn, POOLALLOC_COLD]] void fail_deallocate(const void* block,
                                                    std::string_view fault) const {
    detail::Message message = describe();
    message << "deallocate of " << block << fault;
    detail::fatal(message);
  }
  [[noreturn, POOLALLOC_COLD]] void fail_block(const void* block, std::string_view before,
                                               std::string_view after) const {
    detail::Message message = describe();
    message << before << block << after;
    detail::fatal(message);
  }

  std::vector<Chunk> chunks_;
  detail::ChunkMap chunk_map_;            // which chunk holds an address
  std::vector<std::uint32_t> with_room_;  // see list_with_room()
  detail::LazyBlockList current_;         // the list of the chunk used last
  std::size_t current_index_ = kNoChunk;  // that chunk's index in chunks_, or none
  std::size_t last_freed_ = kNoChunk;     // see deallocate_elsewhere()
  detail::BlockLayout owned_layout_;      // with guard bytes under debug checks
  detail::BlockLayout caller_layout_;     // never with guard bytes
  std::size_t alignment_ = 1;
  std::size_t capacity_ = 0;
  std::size_t used_elsewhere_ = 0;  // see make_current()
  std::size_t peak_used_ = 0;
  std::size_t current_peak_ = 0;
  Growth growth_ = Growth::fixed;
  bool debug_ = false;
  LeakReport leak_report_ = LeakReport::summary;
  detail::Name name_;
};

// `FixedPool "bullets" (block 64 B): 3 used, 1021 free of 1024, peak 10, 1 chunk, debug checks off`
inline std::ostream& operator<<(std::ostream& out, const FixedPool& pool) {
  return detail::write_line(out, [&pool](std::ostream& line) {
    detail::write_title(line, "FixedPool", pool.name(), &pool)
        << " (block " << pool.block_size() << " B): " << pool.used_count() << " used, "
        << pool.free_count() << " free of " << pool.capacity() << ", peak " << pool.peak_used();
    detail::write_chunks_and_checks(line, pool.chunk_count(), pool.debug_checks());
  });
}

}  // namespace poolalloc
