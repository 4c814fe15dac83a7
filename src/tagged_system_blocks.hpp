// Tagged system blocks: the blocks above the pools (glibc's, and those the large-block cache
// hands out again) that a program allocates under a memory tag. They have no span to say their
// tag, so a table keeps each one's tag and usable size, from its malloc to its free: open
// addressing in a mapping of its own, under a lock. An untagged program never touches it: only
// a request made under a tag is recorded, and the frees outside the pool region look in it only
// once a tag was pushed (g_tags_pushed).
//
// Exact through fork() too: while the table's lock is held for fork(), a request or free made by
// another thread does not wait for it (it may hold a libc lock that fork needs) but defers its
// record, which the fork's own parent or child handler replays (tagged_system_blocks.cpp).
#pragma once

#include <cstdint>

#include "bins.hpp"

namespace poolalloc::internal {

// After the system allocator served `block` (not nullptr) to the program's request of `bytes`:
// charged to the calling thread's current tag, if it has one. The bytes requested, not the
// usable size, which glibc's malloc_usable_size would tell (a call to look up lazily, which
// allocates, under the tag).
void charge_system_block(void* block, std::uint64_t bytes);

// What a block's record held: its tag and bytes, or found false.
struct SystemCharge {
  unsigned tag;
  std::uint64_t bytes;
  bool found;
};
// Before `block`, a pointer outside the pool region, goes back to the system allocator (or is
// passed to its realloc): its charge leaves its tag, and is returned.
SystemCharge discharge_system_block(void* block);
// `block` is charged again with `charge` (a realloc that failed leaves it untouched, or one that
// kept it in place: its tag stays, with the bytes of the new request).
void recharge_system_block(void* block, SystemCharge charge);

// The live blocks above the pools charged to `tag`, and the bytes requested for them.
struct TaggedSystemUsage {
  std::uint64_t blocks;
  std::uint64_t bytes;
};
TaggedSystemUsage tagged_system_usage(unsigned tag);

void lock_tagged_system_blocks_for_fork();
void unlock_tagged_system_blocks_after_fork(bool in_child);

}  // namespace poolalloc::internal
