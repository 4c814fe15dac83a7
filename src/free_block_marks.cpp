#include "free_block_marks.hpp"

#include "misuse.hpp"
#include "os.hpp"
#include "pool_region.hpp"

namespace poolalloc::internal {
void choose_free_block_key() {
  const std::uint64_t key = os_random_bits();
  // A zero key would make a block whose second word is its own address look free.
  g_free_block_key = key != 0 ? key : 0x5bd1e9955bd1e995u;
}

void check_free_block(void* block, unsigned cls) {
  if (!region_owns(block) || class_of_block(block) != cls || !is_marked_free(block)) [[unlikely]]
    report_corrupted_free_list(block, cls);
}

}  // namespace poolalloc::internal
