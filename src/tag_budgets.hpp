// Tag budgets (poolalloc_tag_set_budget): a memory tag may carry a budget in bytes and a
// callback that is called each time the tag goes over it. What is compared with the budget is
// what the tag has out (tag_registry.hpp: its live blocks and its freed pooled blocks that wait
// in caches and stacks), as it moves: the charges made under the central lists' and the tagged
// system blocks' locks note a crossing (a counter and a flag), and the callback runs later, in
// a malloc slow path that holds no lock, so that it may allocate.
#pragma once

#include <cstdint>

#include "poolalloc/poolalloc.h"

namespace poolalloc::internal {

// From charge_tag, with what the tag had out before and after a charge: a charge that takes the
// tag from at or below its budget to above it is a crossing, whose call is left for
// run_due_budget_calls. A load and a compare while the tag has no budget.
void note_tag_charge(unsigned tag, std::uint64_t before, std::uint64_t after);

// Sets (or with POOLALLOC_TAG_NO_BUDGET removes) tag `id`'s budget and callback, then runs the
// calls due, this one's first if the tag is over the new budget already. False with errno
// EINVAL (not a registered id) or EAGAIN (called from a fork handler while fork runs).
bool set_tag_budget(int id, std::uint64_t bytes, poolalloc_tag_over_budget over, void* context);

// A tag's budget (POOLALLOC_TAG_NO_BUDGET: none) and how many times it went over it.
struct TagBudget {
  std::uint64_t bytes;
  std::uint64_t crossings;
};
TagBudget tag_budget(unsigned tag);

// Runs the callbacks of the crossings noted so far, one call per crossing, in this thread, which
// holds no allocator lock: the malloc slow paths that charge a tag call it after they left their
// locks. A load while none is due. Not while this thread runs a callback already: a crossing
// noted meanwhile is called at a later slow path. errno is kept.
void run_due_budget_calls();

void lock_tag_budgets_for_fork();
void unlock_tag_budgets_after_fork(bool in_child);

}  // namespace poolalloc::internal
