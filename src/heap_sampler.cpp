#include "heap_sampler.hpp"

#include <cerrno>

#include "heap_profile.hpp"
#include "large_blocks.hpp"
#include "sampling_math.hpp"
#include "size_classes.hpp"
#include "stack_capture.hpp"
#include "system_forwarding.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// Moves on with every change of the mean, so that threads draw their countdowns again.
constinit std::atomic<std::uint32_t> g_settings{1};

// A uniform draw from (0, 1] (xorshift64*), then the exponential distance -ln(u) * mean.
std::int64_t draw_distance(std::uint64_t& state, std::int64_t mean) {
  if (state == 0) state = os_random_bits() | 1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  const std::uint64_t bits = (state * 0x2545F4914F6CDD1DULL) >> 11;
  const double uniform = static_cast<double>(bits + 1) * 0x1.0p-53;
  const double distance = -natural_log(uniform) * static_cast<double>(mean);
  return distance < 1 ? 1 : static_cast<std::int64_t>(distance);
}

}  // namespace

void set_sample_mean(std::int64_t mean) {
  if (mean > 0) load_stack_unwinder();
  g_sample_mean.store(mean < 0 ? 0 : mean, std::memory_order_relaxed);
  g_settings.fetch_add(1, std::memory_order_relaxed);
  // The calling thread's next malloc goes to the slow path, which draws its countdown: the
  // change holds for it at once.
  if (t_cache != &g_empty_cache) CacheBins::bytes_before_sample(*t_cache) = 0;
}

bool sample_due(std::size_t size) {
  ThreadCache* cache = t_cache;
  if (cache == &g_empty_cache) {
    // A thread's first malloc, or one that asks for more than the pools serve: a thread that
    // samples counts on its cache, which it gets now.
    if (g_sample_mean.load(std::memory_order_relaxed) == 0 ||
        (cache = own_thread_cache()) == nullptr)
      return false;
  }
  std::int64_t& left = CacheBins::bytes_before_sample(*cache);
  const std::uint32_t settings = g_settings.load(std::memory_order_relaxed);
  if (cache->sample_settings != settings) {
    cache->sample_settings = settings;
    const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
    left = mean == 0 ? kNoSampleBytes : draw_distance(cache->sample_random, mean);
    return false;
  }
  // Not below 0: the fast path did not count this request (its bin was empty, or the clock's
  // countdown ran out first). A request that a reclaim of the bin sent here after the count is
  // counted twice: rare, and at worst a sample a request early.
  if (left >= 0) left -= static_cast<std::int64_t>(size);
  if (left >= 0) return false;
  const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
  left = mean == 0 ? kNoSampleBytes : draw_distance(cache->sample_random, mean);
  return mean != 0;
}

void* allocate_sampled(std::size_t size, std::size_t alignment, const void* site) {
  void* block =
      alignment <= kMinAlignment ? allocate_large(size) : system_memalign(alignment, size);
  if (block == nullptr) return nullptr;
  const int saved_errno = errno;  // a malloc that succeeds leaves errno alone
  const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
  const void* frames[kMostFrames];
  const std::uint32_t depth = capture_stack(frames, site);
  SampleTotals totals{};
  if (mean != 0 && record_sample(block, size, mean, frames, depth, 0, totals)) after_sample(totals);
  errno = saved_errno;
  return block;
}

}  // namespace poolalloc::internal
