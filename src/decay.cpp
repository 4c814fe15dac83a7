#include "decay.hpp"

#include <time.h>

#include "central_lists.hpp"
#include "options.hpp"
#include "span_carving.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// When the next step is due, in milliseconds of CLOCK_MONOTONIC_COARSE; 0 before the first
// check, which only starts the clock.
constinit std::atomic<std::uint64_t> g_next_step_ms{0};

// The coarse clock is read from the vDSO: no system call, a few nanoseconds, tick resolution.
std::uint64_t now_ms() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000 +
         static_cast<std::uint64_t>(now.tv_nsec) / 1000000;
}

}  // namespace

void decay_if_due() {
  const std::uint64_t now = now_ms();
  std::uint64_t due = g_next_step_ms.load(std::memory_order_relaxed);
  if (now < due) return;
  // The thread that moves the deadline on runs the step; the others go back to their work.
  if (!g_next_step_ms.compare_exchange_strong(due, now + g_options.decay_ms,
                                              std::memory_order_relaxed))
    return;
  if (due == 0) return;
  reap_dead_caches();
  release_recycled_slot_pages();
  reclaim_caches(Reclaim::kIdle);
  empty_central_stacks();
  purge_free_blocks();
  decay_retained_spans();
  request_cache_flush();
}

}  // namespace poolalloc::internal
