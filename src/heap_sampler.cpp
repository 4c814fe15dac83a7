#include "heap_sampler.hpp"

#include <cerrno>

#include "heap_profile.hpp"
#include "large_blocks.hpp"
#include "platform.hpp"
#include "sample_distance.hpp"
#include "size_classes.hpp"
#include "stack_capture.hpp"
#include "system_forwarding.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// Set while this thread records a sample. A malloc meanwhile is served without a sample of its
// own: libunwind allocates a thread's block of thread-local variables at the thread's first
// capture (__tls_get_addr), and at a small mean each such malloc, sampled, would capture again.
constinit POOLALLOC_THREAD_LOCAL bool t_sampling = false;

}  // namespace

void set_sample_mean(std::int64_t mean) {
  if (mean > 0) load_stack_unwinder();
  if (mean <= 0) give_back_spare_sample_blocks();
  g_sample_mean.store(mean < 0 ? 0 : mean, std::memory_order_relaxed);
  g_sample_settings.fetch_add(1, std::memory_order_relaxed);
  // The calling thread's next malloc goes to the slow path, which draws its distance: the change
  // holds for it at once.
  if (t_cache != &g_empty_cache) CacheBins::malloc_bytes_before_slow_path(*t_cache) = 0;
}

void* allocate_sampled(std::size_t size, std::size_t alignment, const void* site) {
  const bool of_a_class = alignment <= kMinAlignment && size <= kLargestClassSize;
  const unsigned cls = of_a_class ? class_of(size) : 0;
  void* block;
  if (of_a_class) {
    // Counted and charged to the thread's tag as glibc's block would be.
    block = take_spare_sample_block(cls);
    block = block != nullptr ? counted(block, size, class_size(cls))
                             : system_malloc_rounded(size, class_size(cls));
  } else {
    block = alignment <= kMinAlignment ? allocate_large(size) : system_memalign(alignment, size);
  }
  if (block == nullptr || t_sampling) return block;
  t_sampling = true;
  const int saved_errno = errno;  // a malloc that succeeds leaves errno alone
  const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
  CapturedStack& stack = t_cache->last_sample.stack;
  capture_stack(stack, site);
  SampleTotals totals{};
  if (mean != 0 && record_sample(block, size, mean, of_a_class ? cls + 1 : 0, stack,
                                 static_cast<std::uint32_t>(current_tag()), totals))
    after_sample(totals);
  errno = saved_errno;
  t_sampling = false;
  return block;
}

void give_back_spare_sample_blocks() {
  void* blocks[kMostSpareBlocks];
  const std::uint32_t count = take_all_spare_sample_blocks(blocks);
  for (std::uint32_t i = 0; i < count; ++i) system_free(blocks[i]);
}

}  // namespace poolalloc::internal
