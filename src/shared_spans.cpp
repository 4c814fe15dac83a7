#include "shared_spans.hpp"

#include <algorithm>
#include <atomic>
#include <bit>

#include "free_block_marks.hpp"
#include "lock.hpp"
#include "misuse.hpp"
#include "span_carving.hpp"
#include "tag_registry.hpp"

namespace poolalloc::internal {
namespace {

struct alignas(64) SharedClass {
  Lock lock;  // after a bin's lock in the lock order (lock.hpp)
  // The span whose runs go out next; the class's other shared spans only empty.
  Span* current = nullptr;
  // How many shared spans the class has: written under the lock, read by the statistics.
  std::atomic<std::uint32_t> spans{0};
  // The first tag that asked for blocks of the class while it was the only tag registered
  // (first_tag_of_class); 0 until one did, and for good once a second tag was registered first.
  std::atomic<unsigned> first_tag{0};
};
SharedClass g_shared[kClassCount];

// Bit i: slot i of g_run_tags serves a shared span. Slots are taken and given up under the
// locks of different classes.
std::atomic<std::uint64_t> g_slots_taken{0};
static_assert(kSharedSpanSlots == 64, "a slot is a bit of g_slots_taken");

// A free slot, taken; -1 when all are taken.
int take_slot() {
  std::uint64_t taken = g_slots_taken.load(std::memory_order_relaxed);
  int slot = 0;
  do {
    if (taken == ~std::uint64_t{0}) return -1;
    slot = std::countr_one(taken);
  } while (!g_slots_taken.compare_exchange_weak(taken, taken | std::uint64_t{1} << slot,
                                                std::memory_order_relaxed));
  return slot;
}
void give_up_slot(int slot) {
  g_slots_taken.fetch_and(~(std::uint64_t{1} << slot), std::memory_order_relaxed);
}

// Under the class's lock: a run of `count` blocks of `span` into `first`, the lowest whose blocks
// all came back (their pages are resident already), else the next never-used one; false when it
// has neither. Looks at 256 runs at most.
bool find_run(Span& span, std::uint32_t count, std::uint32_t& first) {
  const SpanBitmap bitmap = bitmap_of(span);
  if (span.blocks.given_back_count() >= count) {
    for (std::uint32_t at = 0; at + count <= span.blocks.initialised_count(); at += count) {
      if (!SpanBlocks::all_given_back(bitmap, at, count)) continue;
      span.blocks.take_given_back(bitmap, at, count);
      first = at;
      return true;
    }
  }
  if (!span.blocks.has_never_used(count)) return false;
  first = span.blocks.take_never_used(count);
  return true;
}

// Under the class's lock: takes up to `wanted` blocks that came back to the runs of bin `bin`'s
// tag in `span` (a shared span of the bin's class, or nullptr) into blocks[0, n); returns n.
std::uint32_t take_returned_from(Span* span, unsigned bin, void** blocks, std::uint32_t wanted) {
  if (span == nullptr || span->blocks.given_back_count() == 0) return 0;
  const std::uint32_t count = run_blocks(span->blocks.block_size());
  const std::uint8_t* const tags = g_run_tags[span->shared_slot - 1u];
  const SpanBitmap bitmap = bitmap_of(*span);
  std::uint32_t taken = 0;
  for (std::uint32_t first = 0; first < span->blocks.initialised_count() && taken < wanted;
       first += count) {
    if (tags[first / count] != bin_tag(bin)) continue;
    for (std::uint32_t index = first; index < first + count && taken < wanted; ++index) {
      if (!SpanBlocks::all_given_back(bitmap, index, 1)) continue;
      span->blocks.take_given_back(bitmap, index, 1);
      blocks[taken++] = block_at(*span, index);
    }
  }
  return taken;
}

// Under the class's lock: a span carved for class `cls` (its untagged bin, which tells its
// class) with a slot of run tags; nullptr when no slot or no span can be had.
Span* new_shared_span(unsigned cls) {
  const int slot = take_slot();
  if (slot < 0) return nullptr;
  Span* span = carve_span(cls);
  if (span == nullptr) {
    give_up_slot(slot);
    return nullptr;
  }
  span->shared_slot = static_cast<std::uint8_t>(slot + 1);
  return span;
}

}  // namespace

SharedRun take_shared_run(unsigned bin) {
  const unsigned cls = bin_class(bin);
  const std::uint32_t count = run_blocks(class_size(cls));
  SharedClass& shared = g_shared[cls];
  LockGuard guard(shared.lock);
  Span* span = shared.current;
  std::uint32_t first = 0;
  if (span == nullptr || !find_run(*span, count, first)) {
    span = new_shared_span(cls);
    if (span == nullptr) return {nullptr, 0, 0};
    shared.current = span;
    shared.spans.fetch_add(1, std::memory_order_relaxed);
    first = span->blocks.take_never_used(count);
  }
  g_run_tags[span->shared_slot - 1u][first / count] = static_cast<std::uint8_t>(bin_tag(bin));
  for (std::uint32_t index = first; index < first + count; ++index) {
    set_mark(block_at(*span, index));
    const std::size_t mark_offset = std::size_t{index} * class_size(cls) + sizeof(std::uintptr_t);
    span->written_pages |= 1u << (mark_offset / kPageSize);
  }
  return {span, first, count};
}

std::uint32_t take_returned_blocks(unsigned bin, void** blocks, std::uint32_t wanted) {
  SharedClass& shared = g_shared[bin_class(bin)];
  LockGuard guard(shared.lock);
  return take_returned_from(shared.current, bin, blocks, wanted);
}

Span* give_back_shared(unsigned bin, void* block) {
  Span& span = span_of(block);
  SharedClass& shared = g_shared[bin_class(bin)];
  LockGuard guard(shared.lock);
  if (!span.blocks.give_back(block_index_of(span, block), bitmap_of(span))) [[unlikely]]
    report_double_free("free", block, bin);
  if (!span.blocks.empty()) return nullptr;
  if (shared.current == &span) shared.current = nullptr;
  shared.spans.fetch_sub(1, std::memory_order_relaxed);
  const int slot = span.shared_slot - 1;
  std::fill_n(g_run_tags[slot], kRunsPerSharedSpan, std::uint8_t{0});
  span.shared_slot = 0;
  give_up_slot(slot);
  return &span;
}

bool first_tag_of_class(unsigned bin) {
  std::atomic<unsigned>& first = g_shared[bin_class(bin)].first_tag;
  unsigned tag = first.load(std::memory_order_relaxed);
  // Ids count up from 1: the untagged one and one registered tag make 2.
  if (tag == 0 && registered_tags() <= 2 &&
      first.compare_exchange_strong(tag, bin_tag(bin), std::memory_order_relaxed))
    return true;
  return tag == bin_tag(bin);
}

std::uint32_t shared_span_count(unsigned cls) {
  return g_shared[cls].spans.load(std::memory_order_relaxed);
}

}  // namespace poolalloc::internal
