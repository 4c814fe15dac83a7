// Shared spans: the bins of a tag (bins.hpp) that use a size class little share spans of the
// class with the other tags' such bins, by runs of about 512 bytes (pool_region.hpp), so that a
// tag that allocates a few blocks of a class costs part of a page, not a page of a span of its
// own. A tag's bin of a class up to kSharedClassBytes takes its blocks from shared spans while it
// never had more than kYoungBinBytes of them out at once, unless its tag was the first to ask
// for blocks of the class; past that it carves spans of its own (central_lists.cpp). Untagged bins
// never take from shared spans: a program that pushes no tag allocates as before.
//
// A run is handed to one bin whole, with each block's free mark written, and that bin hands its
// blocks out one by one; the run's blocks come back to their span one by one, its tag's bins take
// them again first, and a run whose blocks all came back may go to any tag's bin. A shared span
// that empties goes back to span carving. Every call is made under the lock of the bin it serves
// (central_lists.cpp), and takes the class's shared-span lock (lock.hpp) after it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pool_region.hpp"

namespace poolalloc::internal {

inline constexpr std::uint32_t kSharedClassBytes = 2048;
inline constexpr std::uint64_t kYoungBinBytes = std::uint64_t{16} << 10;

// A run of a shared span: its blocks [first, first + count).
struct SharedRun {
  Span* span;
  std::uint32_t first;
  std::uint32_t count;
};

// A run of blocks for bin `bin` (a registered tag's, of a class up to kSharedClassBytes), its
// blocks' free marks written (the first touch of at most two pages); {nullptr} when none can be
// had (every slot of the run tags taken, or no span: the bin then carves a span of its own).
SharedRun take_shared_run(unsigned bin);

// Takes up to `wanted` blocks that came back to the runs of bin `bin`'s tag in the current shared
// span of its class into blocks[0, n), lowest first, and returns n: a run whose blocks did not all
// come back goes to no other tag, so its tag takes them again before a new run or a span of its
// own (their pages are resident, and what it allocates stays dense). Looks at 256 runs, and at
// the blocks of the tag's own, at most.
std::uint32_t take_returned_blocks(unsigned bin, void** blocks, std::uint32_t wanted);

// Gives back a block of a shared span that bin `bin` took (a run's block, handed out or not).
// Returns its span when the span became empty, its slot given up: the caller releases it
// (release_span) once its bin's lock is dropped. nullptr otherwise. A block that is free already
// is reported as a double free.
Span* give_back_shared(unsigned bin, void* block);

// Whether bin `bin`'s tag is the first tag that asked for blocks of its class while it was the only
// tag registered (it is now, if it is that and none had). That tag's bins of the class take spans
// of their own from the start: a program that pushes one tag gains nothing from shared spans, and
// would pay for each class's blocks split between a shared span and spans of its own (larson under
// one tag: +3.8 % of peak RSS). Once a program registered two tags, a class that none claimed
// stays unclaimed: each tag's first blocks of it come from shared spans, so that a tag that uses
// a class once (a vector that grows through it) takes part of a page, not a span of its own (a
// game's four tags: 11 such spans of one tag's vector).
bool first_tag_of_class(unsigned bin);

// Shared spans of class `cls` now (the statistics count them with the class's untagged bin).
std::uint32_t shared_span_count(unsigned cls);

}  // namespace poolalloc::internal
