#include "heap_sampler.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "heap_profile.hpp"
#include "large_blocks.hpp"
#include "platform.hpp"
#include "sample_distance.hpp"
#include "size_classes.hpp"
#include "stack_capture.hpp"
#include "system_forwarding.hpp"
#include "tagged_system_blocks.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {
namespace {

// Set while this thread records a sample. A malloc meanwhile is served without a sample of its
// own: libunwind allocates a thread's block of thread-local variables at the thread's first
// capture (__tls_get_addr), and at a small mean each such malloc, sampled, would capture again.
constinit POOLALLOC_THREAD_LOCAL bool t_sampling = false;

// A sampled request's block from the system allocator: of its class's size when it is of the
// pools' sizes (`of_a_class`), so that its free may keep it as a spare for the next sample of
// class `cls`.
void* system_block(std::size_t size, std::size_t alignment, bool of_a_class, unsigned cls) {
  if (of_a_class) return system_malloc_rounded(size, class_size(cls));
  return alignment <= kMinAlignment ? allocate_large(size) : system_memalign(alignment, size);
}

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
  const std::int64_t mean = g_sample_mean.load(std::memory_order_relaxed);
  if (t_sampling || t_own_allocations != 0 || mean == 0)
    return system_block(size, alignment, of_a_class, cls);
  t_sampling = true;
  const int saved_errno = errno;
  CapturedStack& stack = t_cache->last_sample.stack;
  capture_stack(stack, site);
  const auto tag = static_cast<std::uint32_t>(current_tag());
  SampleTotals totals{};
  bool recorded = false;
  void* block =
      of_a_class ? record_sample_in_spare(cls, size, mean, stack, tag, totals, recorded) : nullptr;
  if (block != nullptr) {
    counted(block, size, class_size(cls));  // counted and charged to the thread's tag as glibc's
  } else {
    block = system_block(size, alignment, of_a_class, cls);
    recorded = block != nullptr &&
               record_sample(block, size, mean, of_a_class ? cls + 1 : 0, stack, tag, totals);
  }
  if (recorded) after_sample(totals);
  if (block != nullptr) errno = saved_errno;  // a malloc that succeeds leaves errno alone
  t_sampling = false;
  return block;
}

void* reallocate_outside_pools(void* p, std::size_t size, const void* site) {
  SampleRecord record{};
  const bool profiled = sample_records_hold_blocks();
  const bool had_sample = profiled && forget_sample(p, false, &record) == Forgotten::kForgotten;
  if (count_malloc_bytes(size)) {
    const int saved_errno = errno;
    const SystemCharge charge = discharge_system_block(p);
    if (void* sampled = allocate_sampled(size, kMinAlignment, site)) {
      std::memcpy(sampled, p, std::min(size, system_usable_size(p)));
      give_back_spare_sample_blocks(false);  // as at a free (forget_if_sampled): glibc may trim
      free_outside_pools(p);
      return sampled;
    }
    // No memory for the sampled block: glibc's realloc may still resize p in place.
    recharge_system_block(p, charge);
    errno = saved_errno;
  }
  // glibc's realloc frees what it moves or cuts off, and may trim its heap after: no spare may
  // stand above it then.
  if (profiled) give_back_spare_sample_blocks(false);
  void* moved = system_realloc(p, size);
  if (moved == nullptr && had_sample) restore_sample(p, record);
  return moved;
}

void give_back_spare_sample_blocks(bool wait_for_fork) {
  if (!spare_sample_blocks_wait()) return;
  void* blocks[kMostSpareBlocks];
  const std::uint32_t count = take_all_spare_sample_blocks(blocks, wait_for_fork);
  for (std::uint32_t i = 0; i < count; ++i) system_free(blocks[i]);
}

}  // namespace poolalloc::internal
