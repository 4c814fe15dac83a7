#include "decay.hpp"

#include <algorithm>

#include "central_lists.hpp"
#include "decay_requests.hpp"
#include "heap_sampler.hpp"
#include "large_blocks.hpp"
#include "options.hpp"
#include "os.hpp"
#include "span_carving.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// When the next step run by a program's thread is due, in milliseconds of os_clock_ms(); 0
// before the first look, which only starts the clock.
constinit std::atomic<std::uint64_t> g_next_step_ms{0};
// Steps run by the program's threads, and whether the last one gave back kUnsettledBytes or
// more: the steps that follow may too.
constinit std::atomic<std::uint32_t> g_steps{0};
constinit std::atomic<bool> g_steps_give_back{false};
constinit std::atomic<std::size_t> g_last_step_gave_back{0};  // bytes

// What one call of the program does of a step: it moves at most kStackedBlocksPerCall of the
// central stacks' blocks into their spans, and gives back at most this many retained spans (a
// madvise each); the rest wait for the next calls, which between steps do less still. A step that
// emptied 16 MiB of stacked blocks took one malloc 14 to 22 ms.
constexpr std::size_t kRetainedSpansPerCall = 16;
constexpr std::uint32_t kStackedBlocksPerLook = 256;
constexpr std::size_t kRetainedSpansPerLook = 4;

// Calls before the next look of a thread whose frees passed kUnsettledBytes: soon enough to tell
// a mass free from the free half of a cycle.
constexpr std::uint32_t kCallsToConfirm = 64;

// The pools' spans, retained ones included, and the cached large blocks: what a step can shrink.
std::size_t held_bytes() {
  return carved_bytes() + retained_bytes() + large_block_stats().bytes;
}

// One decay step, whole or a call's part, and whether it gave back kUnsettledBytes or more.
void step(bool whole) {
  const std::size_t before = held_bytes();
  decay_step(!whole);
  const std::size_t after = held_bytes();
  const std::size_t gave_back = before > after ? before - after : 0;
  g_last_step_gave_back.store(gave_back, std::memory_order_relaxed);
  g_steps_give_back.store(gave_back >= kUnsettledBytes, std::memory_order_relaxed);
  g_steps.fetch_add(1, std::memory_order_relaxed);
}

// Runs the step that is due, if any: the thread that moves the deadline on runs it, the others
// go back to their work. A step that comes two step intervals or more after the previous one was
// due (the program went quiet: one call a second, say) is run whole, and the look asks its thread
// to empty its cache and give back the retained spans (ClockLook); any other moves a slice of the
// central stacks.
void step_if_due(std::uint64_t now, ClockLook& look) {
  std::uint64_t due = g_next_step_ms.load(std::memory_order_relaxed);
  if (now < due || !g_next_step_ms.compare_exchange_strong(due, now + step_interval_ms(),
                                                           std::memory_order_relaxed))
    return;
  if (due == 0) return;
  look.quiet_step = now >= due + step_interval_ms();
  step(look.quiet_step);
}

// What other threads' refills took from the central lists since the thread's previous look is
// taken back from its frees too: its figure grows no more than the process's (ClockLook).
void count_refills_of_other_threads(ClockLook& look) {
  const std::int64_t net = g_central_net_bytes.load(std::memory_order_relaxed);
  const std::int64_t taken_by_others =
      (look.freed_bytes - look.freed_at_look) - (net - look.net_at_look);
  if (taken_by_others > 0)
    look.freed_bytes = std::max<std::int64_t>(0, look.freed_bytes - taken_by_others);
  look.net_at_look = net;
}

}  // namespace

std::uint64_t step_interval_ms() {
  return g_options.decay_ms / kStepsPerPeriod;
}

bool decay_step(bool a_calls_part) {
  reap_dead_caches();
  release_recycled_slot_pages();
  bool found = reclaim_caches(Reclaim::kIdle);
  found |= empty_central_stacks(a_calls_part ? kStackedBlocksPerCall : UINT32_MAX);
  purge_free_blocks();
  found |= decay_retained_spans(a_calls_part ? kRetainedSpansPerCall : SIZE_MAX);
  found |= decay_large_blocks();
  if constexpr (kHeapProfile) give_back_spare_sample_blocks(false);  // they wait a step at most
  request_cache_flush();
  return found;
}

// While memory waits to go back (the last step gave back much, or the thread is in a mass free),
// the thread looks at the clock often enough that a program making one call a second runs the
// next step within a period of it being due: every call at the default period, every 4096 at an
// hour's. Meanwhile each look moves a slice of the central stacks into their spans and gives back
// a few spans that the last step found unused, so that a busy program's memory goes back between
// steps too, a bounded piece per call. Frees past kUnsettledBytes that may be a mass free make
// the thread look again within kCallsToConfirm calls.
std::uint32_t look_at_clock(ClockLook& look) {
  count_refills_of_other_threads(look);
  if (decay_runs_in_background()) {
    look.freed_bytes = look.freed_at_look = 0;
    look.mass_free = false;
    return kCallsPerClockCheck;
  }
  const std::uint64_t now = os_clock_ms();
  const std::uint32_t steps_before = g_steps.load(std::memory_order_relaxed);
  step_if_due(now, look);
  const std::uint32_t steps = g_steps.load(std::memory_order_relaxed);
  if (steps != look.steps_seen) {
    // What the steps gave back is no longer waiting; if they found little while the thread's
    // frees have stopped, nothing more is waiting.
    look.steps_seen = steps;
    const auto gave_back =
        static_cast<std::int64_t>(g_last_step_gave_back.load(std::memory_order_relaxed));
    if (gave_back >= kUnsettledBytes)
      look.freed_bytes = std::max<std::int64_t>(0, look.freed_bytes - gave_back);
    else if (look.freed_bytes <= look.freed_at_step)
      look.freed_bytes = 0;
    look.freed_at_step = look.freed_bytes;
  }
  look.freed_at_look = look.freed_bytes;
  if (look.freed_bytes < kUnsettledBytes) {
    look.freed_past_unsettled_ms = 0;
  } else if (look.freed_past_unsettled_ms == 0) {
    look.freed_past_unsettled_ms = now;
  }
  look.mass_free =
      look.freed_past_unsettled_ms != 0 && now >= look.freed_past_unsettled_ms + kMassFreeMs;
  if (!look.mass_free && !g_steps_give_back.load(std::memory_order_relaxed))
    return look.freed_past_unsettled_ms != 0 ? kCallsToConfirm : kCallsPerClockCheck;
  if (steps == steps_before) {  // a call's part of the work between steps
    if (central_stacks_bytes() != 0) empty_central_stacks(kStackedBlocksPerLook);
    hand_back_unused_spans(kRetainedSpansPerLook);
  }
  const std::uint64_t due = g_next_step_ms.load(std::memory_order_relaxed);
  const std::uint64_t seconds_to_spare = ((due > now ? due - now : 0) + g_options.decay_ms) / 1000;
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(seconds_to_spare, 1, kCallsPerClockCheck));
}

void empty_requested_stacks(std::uint32_t most_blocks) {
  if (g_stack_drain_requested.exchange(0, std::memory_order_relaxed) == 0) return;
  empty_central_stacks(most_blocks);
  request_cache_flush();  // and the threads' bins, a few at each of their slow paths
}

bool release_unused_memory() {
  // Other threads' caches: all but a block per bin now, and the rest by their owners at their
  // next slow path.
  request_cache_flush();
  reap_dead_caches();
  release_recycled_slot_pages();
  reclaim_caches(Reclaim::kAll);
  empty_central_stacks();
  purge_free_blocks();
  const bool released = release_retained_spans() != 0;
  release_large_blocks();  // before glibc's trim, which can then give their pages back
  if constexpr (kHeapProfile) give_back_spare_sample_blocks();  // likewise
  // Nothing waits to go back now: to the threads' looks at the clock (ClockLook) this is a step
  // that gave back all they had counted.
  g_last_step_gave_back.store(SIZE_MAX >> 1, std::memory_order_relaxed);
  g_steps_give_back.store(false, std::memory_order_relaxed);
  g_steps.fetch_add(1, std::memory_order_relaxed);
  return released;
}

}  // namespace poolalloc::internal
