#include "decay.hpp"

#include "central_lists.hpp"
#include "decay_thread.hpp"
#include "large_blocks.hpp"
#include "options.hpp"
#include "os.hpp"
#include "span_carving.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// When the next step run by a slow path is due, in milliseconds of os_clock_ms(); 0 before the
// first check, which only starts the clock.
constinit std::atomic<std::uint64_t> g_next_step_ms{0};

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

void decay_if_due() {
  if (decay_thread_runs()) return;
  const std::uint64_t now = os_clock_ms();
  std::uint64_t due = g_next_step_ms.load(std::memory_order_relaxed);
  if (now < due) return;
  // The thread that moves the deadline on runs the step; the others go back to their work.
  if (!g_next_step_ms.compare_exchange_strong(due, now + step_interval_ms(),
                                              std::memory_order_relaxed))
    return;
  if (due == 0) return;
  decay_step();
  decay_thread_count_step();
}

}  // namespace poolalloc::internal
