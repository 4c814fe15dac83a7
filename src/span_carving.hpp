// Span carving: hands out spans of the pool region to bins (bins.hpp) and takes back the ones
// that became empty, keeping a few committed and returning the others' pages to the OS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pool_region.hpp"

namespace poolalloc::internal {

// A span set up to serve `bin` (a class of a tag), the region grown for it if need be; nullptr
// when the region is full or cannot grow now (then the request goes to the system allocator).
Span* carve_span(unsigned bin);

// Takes back an empty span, which may then be carved for any bin. Its pages go back to the
// OS unless it is kept among the few retained spans, or the decay thread runs (whose steps give
// back the retained spans that no carve took, span_carving.cpp).
void release_span(Span& span);

// malloc_trim: gives the retained spans' pages back to the OS; returns how many bytes.
std::size_t release_retained_spans();

// Gives back to the OS the pages of a free block of `size` bytes that lie wholly past its header
// (kFreeBlockHeader: its free mark, which must survive).
void release_block_pages(std::byte* block, std::size_t size);

// Decay (decay.hpp): the retained spans that no carve took since the last call (the low-water
// mark of their count) go back to the OS, at most `most_spans` of them. True if any went back or
// are left.
bool decay_retained_spans(std::size_t most_spans = SIZE_MAX);

// Decay, between its calls: at most `most_spans` of the spans that the last call of
// decay_retained_spans found unused but kept go back.
void hand_back_unused_spans(std::size_t most_spans);

// Bytes of spans carved and not released: what the pools hold.
std::size_t carved_bytes();

// Bytes of carved spans resident in memory (mincore), the retained empty ones included: what
// the pools cost in RSS.
std::size_t resident_bytes();
// Bytes of the retained empty spans (not in any class, pages still committed).
std::size_t retained_bytes();

void lock_span_carving_for_fork();
void unlock_span_carving_after_fork(bool in_child);

}  // namespace poolalloc::internal
