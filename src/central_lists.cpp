#include "central_lists.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>

#include "decay_requests.hpp"
#include "free_block_marks.hpp"
#include "intrusive_list.hpp"
#include "lock.hpp"
#include "misuse.hpp"
#include "os.hpp"
#include "pool_region.hpp"
#include "shared_spans.hpp"
#include "span_carving.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {
namespace {

// A class's stack holds at most this many blocks and bytes of blocks: enough that a program
// churning 10,000 small blocks, or sweeping 1,000 blocks of 4 KiB, cycles them between its cache
// and the stack without walking spans.
constexpr std::uint32_t kStackBlocks = 16384;
constexpr std::size_t kStackBytes = std::size_t{4} << 20;
// The stacks of all classes together hold about this many at most, so that a program that frees
// much of many classes keeps little in them. (Classes check and count it under their own locks:
// the sum may pass it by what two threads stack at once.)
constexpr std::size_t kAllStacksBytes = std::size_t{16} << 20;
std::atomic<std::size_t> g_all_stacks_bytes{0};
// Stacked bytes past which a class that must fault in a new span asks for the stacks to be
// emptied (span_with_free_blocks).
constexpr std::size_t kDrainStacksBytes = std::size_t{256} << 10;

// Blocks out of their spans over all classes, and the most there were at once (statistics:
// the classes' own peaks came at different times).
std::atomic<std::uint64_t> g_all_blocks_out{0};
std::atomic<std::uint64_t> g_all_peak_out{0};

void count_blocks_out(std::uint32_t count) {
  const std::uint64_t now = g_all_blocks_out.fetch_add(count, std::memory_order_relaxed) + count;
  std::uint64_t peak = g_all_peak_out.load(std::memory_order_relaxed);
  while (now > peak &&
         !g_all_peak_out.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

constexpr std::uint32_t stack_capacity(unsigned cls) {
  return std::min(kStackBlocks, static_cast<std::uint32_t>(kStackBytes / class_size(cls)));
}

// Where each class's stack starts in a tag's stack slots.
constexpr auto kStackOffsets = [] {
  std::array<std::uint32_t, kClassCount + 1> offsets{};
  for (unsigned cls = 0; cls < kClassCount; ++cls)
    offsets[cls + 1] = offsets[cls] + stack_capacity(cls);
  return offsets;
}();
constexpr std::size_t kTagStackBytes = kStackOffsets[kClassCount] * sizeof(void*);

// The untagged classes' stacks, about 3.5 MiB of pointers; a page is touched once the stack
// reaches it. A registered tag's are mapped as it is registered (map_tag_stacks): address space
// only, until its stacks reach their pages.
void* g_stack_slots[kStackOffsets[kClassCount]];
void** g_tag_stack_slots[kTagCount] = {g_stack_slots};

// The stack of bin `bin`: stack_of(bin)[0, stacked) are free blocks, the latest given back on
// top. Of a registered tag only: its slots were stored before its id was published.
void** stack_of(unsigned bin) {
  return g_tag_stack_slots[bin_tag(bin)] + kStackOffsets[bin_class(bin)];
}

// The page of a span that `offset` bytes from its start falls in.
constexpr std::uint32_t page_in_span(std::size_t offset) {
  return static_cast<std::uint32_t>(offset / kPageSize);
}

// The bits of Span::written_pages of the pages wholly past the header of the span's block
// `index`: those that purge_free_blocks gives back.
std::uint32_t pages_past_header(const Span& span, std::uint32_t index) {
  const std::uint32_t offset = index * span.blocks.block_size();
  const std::uint32_t first = page_in_span(offset + kFreeBlockHeader + kPageSize - 1);
  const std::uint32_t end = page_in_span(offset + span.blocks.block_size());
  if (first >= end) return 0;
  const std::uint64_t bits = (std::uint64_t{1} << (end - first)) - 1;
  return static_cast<std::uint32_t>(bits << first);
}

// A block of a span that is not full, with its free mark. Nothing is read from the block: which
// blocks are free is the span's bitmap's business (span_blocks.hpp). A block that came back to
// the bitmap carries its mark since its free, so only a never-used one is written (its mark is
// the first touch of its page): a refill of blocks that came back touches none of them.
void* carve_block(Span& span) {
  const bool never_used = span.blocks.next_is_never_used();
  void* block = block_at(span, span.blocks.take(bitmap_of(span)));
  if (never_used) set_mark(block);
  return block;
}

struct alignas(64) BinList {
  Lock lock;                  // third in the lock order (lock.hpp)
  std::uint32_t stacked = 0;  // blocks in the class's stack (stack_of); beside the lock, so that
                              // the list stays one cache line
  // Blocks given back while the lock was held for fork(), linked through their first word and
  // marked orphaned (free_block_marks.hpp): pushed without the lock, drained into their spans by
  // the next holder.
  std::atomic<void*> orphans{nullptr};
  // How many blocks wait there, counted before they are pushed and after they are drained, so
  // that the statistics count them free, not live, until the next holder files them (never fewer
  // than wait there; in a child of fork(), more by the blocks of a push that fork interrupted).
  std::atomic<std::uint64_t> orphaned{0};
  Span* partial = nullptr;  // spans with free blocks and used ones, doubly linked
  // ClassCounters but `stacked`, which class_counters() fills in (`spans`: the bin's own).
  std::uint64_t blocks_out = 0;
  std::uint64_t peak_out = 0;
  std::uint32_t spans = 0;
  // The run of a shared span (shared_spans.hpp) whose blocks the bin hands out: blocks
  // [run_next, run_end) of span run_span (its index) are its and not handed out yet. Empty
  // (run_next == run_end) but while the bin is young.
  std::uint32_t run_span = 0;
  std::uint16_t run_next = 0;
  std::uint16_t run_end = 0;
  // Blocks of the bin's runs that came back to their shared spans, at most (a run that came back
  // whole may have gone to another tag since, a span emptied): while there may be any, a refill
  // takes them first, young bin or not, so that none stay in a shared span that no bin takes from.
  std::uint32_t returned = 0;

  // Whether the bin takes its blocks from shared spans (shared_spans.hpp): a tag's bin of a class
  // up to kSharedClassBytes that never had kYoungBinBytes of blocks out at once, and no span of
  // its own (which it has when no shared run could be had), of a tag other than the first that
  // asked for blocks of the class.
  bool young(unsigned bin) const {
    return bin_tag(bin) != 0 && bin_block_size(bin) <= kSharedClassBytes &&
           peak_out * bin_block_size(bin) < kYoungBinBytes && spans == 0 &&
           !first_tag_of_class(bin);
  }
  // Carves up to `wanted` blocks into blocks[wanted - n, wanted) from the bin's run, and when it
  // runs out, from the blocks that came back to its tag's runs, then, if the bin is young, from
  // one new run at most; returns n.
  std::uint32_t carve_shared_blocks(unsigned bin, void** blocks, std::uint32_t wanted) {
    std::uint32_t count = 0;
    for (bool may_take_run = true; count < wanted;) {
      if (run_next == run_end) {
        if (!may_take_run) break;
        may_take_run = false;
        if (returned != 0) {
          const std::uint32_t asked = wanted - count;
          const std::uint32_t taken = take_returned_blocks(bin, blocks, asked);
          std::copy_backward(blocks, blocks + taken, blocks + wanted - count);
          count += taken;
          returned = taken < asked ? 0 : returned - std::min(returned, taken);
          if (taken != 0) break;
        }
        if (!young(bin)) break;
        const SharedRun run = take_shared_run(bin);
        if (run.span == nullptr) break;
        run_span = static_cast<std::uint32_t>(span_index_of(*run.span));
        run_next = static_cast<std::uint16_t>(run.first);
        run_end = static_cast<std::uint16_t>(run.first + run.count);
      }
      blocks[wanted - ++count] = block_at(span_at(run_span), run_next++);
    }
    return count;
  }
  // Under the lock, for decay and malloc_trim: the blocks of the bin's run not handed out go back
  // to their span; returns it when it became empty (for release once the lock is dropped).
  Span* give_back_run(unsigned bin) {
    Span* to_release = nullptr;
    for (; run_next != run_end; ++run_next) {
      if (Span* empty = give_back_shared(bin, block_at(span_at(run_span), run_next)))
        list_push(to_release, *empty);
    }
    return to_release;
  }

  // A span to take blocks from: a partial one, else a newly carved one. When no empty span is
  // retained (the new one's pages will be faulted in) while the central stacks hold more than
  // kDrainStacksBytes, the decay thread (without it, the program's next slow path) is asked to
  // empty them: after a mass free in a random order, the blocks left in a stack keep every span
  // of their class from emptying, and a level of other sizes loaded next would fault in spans of
  // its own (96 MiB of 64-byte objects freed, then 96 MiB of 96-byte ones allocated: 24,595
  // faults, RSS doubled).
  Span* span_with_free_blocks(unsigned bin) {
    if (partial != nullptr) return partial;
    if (g_all_stacks_bytes.load(std::memory_order_relaxed) > kDrainStacksBytes &&
        retained_bytes() == 0)
      request_stack_drain();
    Span* span = carve_span(bin);
    if (span == nullptr) return nullptr;
    ++spans;
    dlist_push(partial, *span);
    return span;
  }
  // Carves up to `wanted` blocks into blocks[0, n), touching at most `first_touches_left` pages
  // not written before (take_blocks), and returns n, the lowest address last: a thread cache
  // hands out from the end, so the program gets them in address order.
  std::uint32_t carve_blocks(unsigned bin, void** blocks, std::uint32_t wanted,
                             std::uint32_t first_touches_left) {
    std::uint32_t count = carve_shared_blocks(bin, blocks, wanted);
    bool page_limit_reached = count != 0;
    while (count < wanted && !page_limit_reached) {
      Span* span = span_with_free_blocks(bin);
      if (span == nullptr) break;
      while (count < wanted && !span->blocks.full()) {
        if (span->blocks.next_is_never_used()) {
          // The page where carving writes the block's mark: a first touch, unless written before.
          const std::size_t next_offset =
              std::size_t{span->blocks.initialised_count()} * span->blocks.block_size();
          const std::uint32_t page_bit = 1u << page_in_span(next_offset + sizeof(std::uintptr_t));
          if ((span->written_pages & page_bit) == 0 && first_touches_left-- == 0) {
            page_limit_reached = true;
            break;
          }
          span->written_pages |= page_bit;
        }
        blocks[wanted - ++count] = carve_block(*span);
      }
      carved_end_of(*span).store(span->blocks.initialised_count() * bin_block_size(bin),
                                 std::memory_order_relaxed);
      if (span->blocks.full()) dlist_unlink(partial, *span);
    }
    std::copy(blocks + wanted - count, blocks + wanted, blocks);
    blocks_out += count;
    peak_out = std::max(peak_out, blocks_out);
    count_blocks_out(count);
    if (count != 0) charge_tag(bin_tag(bin), std::uint64_t{count} * bin_block_size(bin));
    return count;
  }
  // Puts the blocks back into their spans; returns the spans that became empty, linked
  // through Span::next, for the caller to release once the lock is dropped. Nothing is written
  // into the blocks: each keeps its free mark, so a block freed again while it waits there is
  // still recognised, and one whose bit says it is there already (freed twice, its mark written
  // over in between) is reported. `purged`: the blocks' pages went back to the OS meanwhile
  // (purge_free_blocks), so they do not make their spans unpurged.
  Span* return_to_spans(unsigned bin, void* const* blocks, std::uint32_t count,
                        bool purged = false) {
    Span* to_release = nullptr;
    blocks_out -= count;
    g_all_blocks_out.fetch_sub(count, std::memory_order_relaxed);
    // Purged blocks were taken out by take_unpurged, which did not charge the tag for them.
    if (count != 0 && !purged)
      discharge_tag(bin_tag(bin), std::uint64_t{count} * bin_block_size(bin));
    for (std::uint32_t i = 0; i < count; ++i) {
      void* block = blocks[i];
      Span& span = span_of(block);
      if (span.shared_slot != 0) {
        ++returned;
        if (Span* empty = give_back_shared(bin, block)) list_push(to_release, *empty);
        continue;
      }
      const bool was_full = span.blocks.full();
      if (!span.blocks.give_back(block_index_of(span, block), bitmap_of(span))) [[unlikely]]
        report_double_free("free", block, bin);
      if (was_full) dlist_push(partial, span);
      if (!purged) span.unpurged = true;
      if (!span.blocks.empty()) continue;
      dlist_unlink(partial, span);
      --spans;
      list_push(to_release, span);
    }
    return to_release;
  }
  // Under the lock: the orphaned blocks back into their spans (see return_to_spans).
  Span* drain_orphans(unsigned bin) {
    if (orphans.load(std::memory_order_relaxed) == nullptr) return nullptr;
    Span* to_release = nullptr;
    std::uint64_t drained = 0;
    for (void* block = orphans.exchange(nullptr, std::memory_order_acquire); block != nullptr;) {
      check_orphan(block, bin);
      void* next = next_orphan(block);
      set_mark(block);
      list_splice(to_release, return_to_spans(bin, &block, 1));
      block = next;
      ++drained;
    }
    orphaned.fetch_sub(drained, std::memory_order_relaxed);
    return to_release;
  }
  // Without the lock, and without waiting: the blocks join the orphans.
  void orphan(void* const* blocks, std::uint32_t count) {
    orphaned.fetch_add(count, std::memory_order_relaxed);
    for (std::uint32_t i = 1; i < count; ++i) mark_orphaned(blocks[i - 1], blocks[i]);
    void* head = orphans.load(std::memory_order_relaxed);
    do {
      mark_orphaned(blocks[count - 1], head);
    } while (!orphans.compare_exchange_weak(head, blocks[0], std::memory_order_release,
                                            std::memory_order_relaxed));
  }
  // Under the lock: onto the stack while it has room, the rest into the spans.
  Span* file(unsigned bin, void* const* blocks, std::uint32_t count) {
    const std::size_t all = g_all_stacks_bytes.load(std::memory_order_relaxed);
    const auto room = static_cast<std::uint32_t>(
        all < kAllStacksBytes ? (kAllStacksBytes - all) / bin_block_size(bin) : 0);
    const std::uint32_t stacking =
        std::min({count, stack_capacity(bin_class(bin)) - stacked, room});
    std::copy_n(blocks, stacking, stack_of(bin) + stacked);
    stacked += stacking;
    g_all_stacks_bytes.fetch_add(std::size_t{stacking} * bin_block_size(bin),
                                 std::memory_order_relaxed);
    return return_to_spans(bin, blocks + stacking, count - stacking);
  }
  // Under the lock, for purge_free_blocks: takes every block that came back to the first span
  // whose blocks came back since its last purge out of its bitmap into blocks[0, n), as if
  // carved, so that no refill hands them out while their pages go back without the lock; the
  // caller puts them back with return_to_spans(..., purged). 0 when no span is left to purge.
  std::uint32_t take_unpurged(void** blocks) {
    for (Span* span = partial; span != nullptr; span = span->next) {
      if (!span->unpurged) continue;
      span->unpurged = false;
      // The pages wholly past each free block's header go back now.
      span->blocks.for_each_given_back(bitmap_of(*span), [&](std::uint32_t index) {
        span->written_pages &= ~pages_past_header(*span, index);
      });
      std::uint32_t count = 0;
      while (span->blocks.given_back_count() != 0)
        blocks[count++] = block_at(*span, span->blocks.take(bitmap_of(*span)));
      if (count == 0) continue;
      if (span->blocks.full()) dlist_unlink(partial, *span);
      blocks_out += count;
      g_all_blocks_out.fetch_add(count, std::memory_order_relaxed);
      return count;
    }
    return 0;
  }
  // Under the lock: up to `most` of the stacked blocks (the latest) into their spans.
  Span* unstack(unsigned bin, std::uint32_t most) {
    const std::uint32_t count = std::min(most, stacked);
    stacked -= count;
    g_all_stacks_bytes.fetch_sub(std::size_t{count} * bin_block_size(bin),
                                 std::memory_order_relaxed);
    return return_to_spans(bin, stack_of(bin) + stacked, count);
  }
};

static_assert(sizeof(BinList) == 64, "a bin's central list is one cache line");
BinList g_bins[kBinCount];

void release_all(Span* spans) {
  while (Span* span = list_pop(spans)) release_span(*span);
}

}  // namespace

std::uint32_t take_blocks(unsigned bin, void** blocks, std::uint32_t wanted,
                          std::uint32_t first_touches_most) {
  BinList& list = g_bins[bin];
  std::uint32_t count = 0;
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) return 0;  // held for fork(): the caller forwards to the system
    to_release = list.drain_orphans(bin);
    count = std::min(wanted, list.stacked);
    list.stacked -= count;
    g_all_stacks_bytes.fetch_sub(std::size_t{count} * bin_block_size(bin),
                                 std::memory_order_relaxed);
    std::copy_n(stack_of(bin) + list.stacked, count, blocks);
    count += list.carve_blocks(bin, blocks + count, wanted - count, first_touches_most);
  }
  release_all(to_release);
  return count;
}

void give_blocks(unsigned bin, void* const* blocks, std::uint32_t count) {
  if (count == 0) return;
  BinList& list = g_bins[bin];
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) {
      list.orphan(blocks, count);  // held for fork(): the next holder files them
      return;
    }
    to_release = list.drain_orphans(bin);
    list_splice(to_release, list.file(bin, blocks, count));
  }
  release_all(to_release);  // outside the class lock: madvise is a system call
}

// The most blocks that the slow paths of decay and malloc_trim move under a class's lock at a
// time. They drop it in between, so that a thread whose refill or flush waits for the lock
// waits for at most this many (a central stack of 16,384 blocks emptied under the lock kept a
// game's malloc waiting 1.2 ms).
constexpr std::uint32_t kBlocksPerLockHold = 256;

bool empty_central_stacks(std::uint32_t most_blocks) {
  bool emptied = false;
  const unsigned bins = registered_bins();
  for (unsigned bin = 0; bin < bins && most_blocks != 0; ++bin) {
    BinList& list = g_bins[bin];
    // As many blocks as are stacked at the start: those stacked meanwhile wait for the next step.
    bool first = true;
    for (std::uint32_t left = 0; first || left != 0; first = false) {
      Span* to_release = nullptr;
      {
        TryLockGuard guard(list.lock);
        if (!guard.locked()) break;  // held for fork(): nothing to trim now
        if (first) left = std::min(list.stacked, most_blocks);
        to_release = list.drain_orphans(bin);
        if (first) list_splice(to_release, list.give_back_run(bin));
        emptied |= list.stacked != 0;
        const std::uint32_t moving = std::min(left, kBlocksPerLockHold);
        list_splice(to_release, list.unstack(bin, moving));
        left -= moving;
        most_blocks -= moving;
      }
      release_all(to_release);
    }
  }
  return emptied;
}

void return_blocks_to_spans(unsigned bin, void* const* blocks, std::uint32_t count, bool purged) {
  if (count == 0) return;
  BinList& list = g_bins[bin];
  Span* to_release = nullptr;
  {
    TryLockGuard guard(list.lock);
    if (!guard.locked()) {
      // Held for fork(): the next holder files them, and discharges their tag as it does any
      // orphan's. Purged blocks were never charged (take_unpurged): they are now, apart from the
      // peak, or the tag's bytes out would fall below what it has out.
      if (purged) charge_tag_leaving_peak(bin_tag(bin), std::uint64_t{count} * bin_block_size(bin));
      list.orphan(blocks, count);
      return;
    }
    to_release = list.drain_orphans(bin);
    list_splice(to_release, list.return_to_spans(bin, blocks, count, purged));
  }
  release_all(to_release);
}

void purge_free_blocks() {
  // The classes above a page (smaller blocks keep a page whole); a span holds at most this many.
  constexpr unsigned kFirstClass = class_of_medium(kPageSize) + 1;
  constexpr std::uint32_t kMostPerSpan = kSpanSize / class_size(kFirstClass);
  static_assert(class_size(kFirstClass - 1) == kPageSize);
  for (unsigned bin = 0, bins = registered_bins(); bin < bins; ++bin) {
    if (bin_class(bin) < kFirstClass) continue;
    BinList& list = g_bins[bin];
    // A span at a time: its free blocks out of its bitmap under the lock, their pages back to
    // the OS without it (a madvise each), then back into the bitmap under it again. A refill
    // that waits for the lock waits for one span's worth of bookkeeping, never for a madvise.
    for (;;) {
      void* blocks[kMostPerSpan];
      std::uint32_t count = 0;
      {
        TryLockGuard guard(list.lock);
        if (!guard.locked()) break;  // held for fork(): nothing to purge now
        count = list.take_unpurged(blocks);
      }
      if (count == 0) break;
      for (std::uint32_t i = 0; i < count; ++i)
        release_block_pages(static_cast<std::byte*>(blocks[i]), bin_block_size(bin));
      return_blocks_to_spans(bin, blocks, count, /*purged=*/true);
    }
  }
}

std::size_t central_stacks_bytes() {
  return g_all_stacks_bytes.load(std::memory_order_relaxed);
}

ClassCounters class_counters(unsigned bin) {
  BinList& list = g_bins[bin];
  // Held for fork(), the counters cannot change: read them as they are. (The forking thread
  // itself may be asking, from another library's fork handler.)
  TryLockGuard guard(list.lock);
  // An untagged bin's spans are its class's shared spans too (shared_spans.hpp), whose blocks
  // its tags' bins count.
  const std::uint64_t shared = bin_tag(bin) == 0 ? shared_span_count(bin_class(bin)) : 0;
  return {list.blocks_out, list.peak_out,
          list.stacked + list.orphaned.load(std::memory_order_relaxed), list.spans + shared};
}

std::uint64_t peak_blocks_out() {
  return g_all_peak_out.load(std::memory_order_relaxed);
}

bool map_tag_stacks(unsigned tag) {
  auto* slots = static_cast<void**>(os_map(kTagStackBytes));
  if (slots == nullptr) return false;
  g_tag_stack_slots[tag] = slots;
  return true;
}

// The tag registry is held for fork() before these: the registered bins stay as they are.
void lock_central_lists_for_fork() {
  for (unsigned bin = 0, bins = registered_bins(); bin < bins; ++bin)
    g_bins[bin].lock.lock_for_fork();
}

void unlock_central_lists_after_fork(bool in_child) {
  for (unsigned bin = 0, bins = registered_bins(); bin < bins; ++bin)
    g_bins[bin].lock.unlock_after_fork(in_child);
}

}  // namespace poolalloc::internal
