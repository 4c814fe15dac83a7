// Memory tags: the names programs register (poolalloc_tag_register), and what each tag is
// charged. A tag's blocks are told apart by their bins (bins.hpp); this module holds what the
// bins cannot: the names, how many tags exist, the tags' peaks and the blocks above the pools
// charged to them (tagged_system_blocks.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bins.hpp"

namespace poolalloc::internal {

// The longest name a tag may have, in bytes.
inline constexpr std::size_t kMaxTagName = 63;

// Tags [0, registered_tags()) exist: the untagged one, and those registered so far. A tag's
// central stacks are mapped before its id is published (release, acquire here), so the slow
// paths' loops over the bins of registered tags find them; an untagged program's loops are the
// loops over the classes they were.
inline constinit std::atomic<unsigned> g_registered_tags{1};
inline unsigned registered_tags() {
  return g_registered_tags.load(std::memory_order_acquire);
}
// The bins of the registered tags, [0, registered_bins()): what the slow paths' loops over bins
// go over.
inline unsigned registered_bins() {
  return registered_tags() * kClassCount;
}
inline bool is_registered_tag(int id) {
  return id >= 0 && static_cast<unsigned>(id) < registered_tags();
}

// Set by the first push of a tag other than untagged, never cleared: from then on the frees of
// blocks above the pools look for a charge in the table of tagged system blocks.
inline constinit std::atomic<bool> g_tags_pushed{false};

// The id of `name` (1 .. 255), registering it if it is new, or 0 for "untagged", tag 0's name;
// -1 with errno EINVAL (nullptr, "", longer than kMaxTagName), ENOSPC (255 tags exist already),
// ENOMEM (no memory for the tag's central stacks) or EAGAIN (called by the forking thread while
// fork() holds the registry: from a fork handler). Another thread's call waits for the fork.
int register_tag(const char* name);
// "untagged" for tag 0; the registered name otherwise. Only for registered tags.
const char* tag_name(unsigned tag);

// What a tag has out: the bytes of its pooled blocks out of their spans (live, or waiting in a
// thread cache or central stack) plus its live blocks above the pools; and the most that ever
// was. Moved by the slow paths (a refill's or a flush's batch at a time) and by the table of
// tagged system blocks, never by the fast paths. A charge that takes the tag over its budget
// notes a crossing (tag_budgets.hpp).
void charge_tag(unsigned tag, std::uint64_t bytes);
void discharge_tag(unsigned tag, std::uint64_t bytes);
std::uint64_t tag_out_bytes(unsigned tag);
// A charge that moves no peak: blocks that the allocator's own bookkeeping holds out of their
// spans for a moment (central_lists.cpp: purged blocks orphaned while fork() holds their lock).
void charge_tag_leaving_peak(unsigned tag, std::uint64_t bytes);
std::uint64_t tag_peak_bytes(unsigned tag);

void lock_tag_registry_for_fork();
void unlock_tag_registry_after_fork(bool in_child);

}  // namespace poolalloc::internal
