#include "free_block_marks.hpp"

#include "misuse.hpp"
#include "os.hpp"
#include "pool_region.hpp"

namespace poolalloc::internal {
void choose_free_block_key() {
  const std::uint64_t key = os_random_bits();
  // A key whose lower half is 0 would make a block whose second word is its own address look
  // free (the marks differ in their upper half only).
  g_free_block_key = static_cast<std::uint32_t>(key) != 0 ? key : 0x5bd1e9955bd1e995u;
}

void check_orphan(void* block, unsigned bin) {
  if (!region_owns(block) || bin_of_block(block) != bin || !carries_mark(block, Waits::kOrphaned))
      [[unlikely]]
    report_corrupted_free_list(block, bin);
}

}  // namespace poolalloc::internal
