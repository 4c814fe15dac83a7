#include "decay.hpp"

#include "central_lists.hpp"
#include "decay_requests.hpp"
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

// The pools' spans, retained ones included, and the cached large blocks: what a step can shrink.
std::size_t held_bytes() {
  return carved_bytes() + retained_bytes() + large_block_stats().bytes;
}

// Runs the step that is due, if any: the thread that moves the deadline on runs it, the others
// go back to their work. True when the step came two step intervals or more after the previous
// one was due: the program went quiet (one call a second, say).
bool step_if_due() {
  const std::uint64_t now = os_clock_ms();
  std::uint64_t due = g_next_step_ms.load(std::memory_order_relaxed);
  if (now < due || !g_next_step_ms.compare_exchange_strong(due, now + step_interval_ms(),
                                                           std::memory_order_relaxed))
    return false;
  if (due == 0) return false;
  const std::size_t before = held_bytes();
  decay_step();
  const std::size_t after = held_bytes();
  g_steps_give_back.store(before >= after + kUnsettledBytes, std::memory_order_relaxed);
  g_steps.fetch_add(1, std::memory_order_relaxed);
  return now >= due + step_interval_ms();
}

}  // namespace

std::uint64_t step_interval_ms() {
  return g_options.decay_ms / kStepsPerPeriod;
}

bool decay_step() {
  reap_dead_caches();
  release_recycled_slot_pages();
  bool found = reclaim_caches(Reclaim::kIdle);
  found |= empty_central_stacks();
  purge_free_blocks();
  found |= decay_retained_spans();
  found |= decay_large_blocks();
  request_cache_flush();
  return found;
}

std::uint32_t look_at_clock(ClockLook& look) {
  if (decay_runs_in_background()) {
    look.freed_bytes = 0;
    return kCallsPerClockCheck;
  }
  look.quiet_step = step_if_due();
  const std::uint32_t steps = g_steps.load(std::memory_order_relaxed);
  if (steps != look.steps_seen) {
    look.steps_seen = steps;
    look.freed_bytes = 0;
  }
  const bool unsettled =
      look.freed_bytes >= kUnsettledBytes || g_steps_give_back.load(std::memory_order_relaxed);
  return unsettled ? 1 : kCallsPerClockCheck;
}

void empty_requested_stacks() {
  if (g_stack_drain_requested.exchange(0, std::memory_order_relaxed) == 0) return;
  empty_central_stacks();
  request_cache_flush();  // and the thread's bins, from this slow path on, as the thread asks
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
  // Nothing waits to go back now: the threads' looks at the clock count from here (ClockLook).
  g_steps_give_back.store(false, std::memory_order_relaxed);
  g_steps.fetch_add(1, std::memory_order_relaxed);
  return released;
}

}  // namespace poolalloc::internal
