// The release allocator: routes each request to the pools or to the system allocator.
// Argument checks (overflow, zero sizes, alignments) are the exported functions' business.
// allocate and deallocate are inline so that malloc and free compile to the fast path itself.
#pragma once

#include <cstddef>

#include "large_blocks.hpp"
#include "misuse.hpp"
#include "options.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "system_forwarding.hpp"
#include "thread_cache.hpp"

namespace poolalloc::internal {

// Everything but a hit in the thread cache: refilling it, initialising the allocator on the
// first small request, and forwarding to the system allocator. Out of line, and reached by a
// tail call, so that the fast path saves no register.
// `site`: the return address into the program, which a sampled allocation's call stack starts
// at (heap_sampler.hpp). nullptr from malloc, whose fast path must not spend an instruction on
// it: allocate_slow takes its own return address then, which is the program's where malloc
// reaches it by a tail call, as it does built with g++ or clang at -O2 and above (elsewhere the
// stack keeps malloc's frame on top).
void* allocate_slow(std::size_t size, const void* site);

// free of a pointer outside the pool region (nullptr included): counted down to the thread's
// look at the clock, then the large-block cache or glibc. Out of line, for the same reason.
void free_unpooled(void* p);

// malloc's fast path: a table lookup, a handful of loads and stores to thread-local memory, no
// lock and no atomic read-modify-write. As exported (g++ 12 -O3, x86-64; objdump of
// libpoolalloc.so) it is 26 instructions before its ret: size check 2, class lookup 4, the
// thread's memory tag 1 (an add of its bins' offset to the class, thread_cache.hpp), bin
// address 3, pop 15 of which 3 are the second look at bottom that lets other threads reclaim
// the bin, 3 the statistics' count and 2 the countdown in bytes to the slow path, which serves
// both the heap profile's next sample and the thread's next look at the clock (count_malloc_bytes,
// thread_cache.hpp), clearing the mark 1.
inline void* allocate(std::size_t size, const void* site = nullptr) {
  if (size <= g_pooled_limit) [[likely]] {
    ThreadCache* const cache = t_cache;  // one read: on Windows a native slot's (platform.hpp)
    if (void* block = cache->pop(cache->current_bin(class_of(size)), size)) [[likely]]
      return block;
  }
  return allocate_slow(size, site);
}

// A block of class `cls`, charged to the thread's current tag, or nullptr when the pools cannot
// serve it. The request was counted for the heap profile already.
inline void* pool_allocate(unsigned cls) {
  ThreadCache* const cache = t_cache;
  if (void* block = cache->pop(cache->current_bin(cls), 0)) [[likely]]
    return block;
  return refill_and_allocate(cls);
}

// Gives back a block of bin `bin` (the tag its malloc charged, whichever thread frees it).
inline void pool_deallocate(void* block, unsigned bin) {
  if (!t_cache->push(bin, block)) [[unlikely]]
    flush_and_deallocate(bin, block);
}

// The bin of p, a pointer that region_owns() accepted and that is no block of a span of one bin
// that malloc handed out: a block of a shared span that malloc handed out (shared_spans.hpp);
// anything else is reported, naming `operation`, and the program aborts.
unsigned shared_bin_or_report(const void* p, const char* operation);
// free of such a pointer: out of line, and reached by a tail call, so that free's fast path
// saves no register for it.
void deallocate_shared(void* p);

// The bin (class and tag) of p, a pointer that region_owns() accepted, when p is a block that
// malloc handed out; anything else is reported, naming `operation`, and the program aborts.
inline unsigned handed_out_bin_or_report(const void* p, const char* operation) {
  const HandedOutBlock block = decode_handed_out_block(p);
  if (!block.handed_out) [[unlikely]]
    return shared_bin_or_report(p, operation);
  return block.bin;
}

// free's fast path: 38 instructions before its ret (region check 6, the span's record 5, the
// check that the block was handed out, below the span's carved end 3, and is a block start 5,
// the bin 1 (class and memory tag: the span's, so the tag its malloc charged), bin address 5, push
// 13 with the countdown to the look at the clock (2) and the double-free check, which compares the
// lower half of the block's second word with its mark's: one compare finds both marks, wherever a
// block freed already waits, free_block_marks.hpp). The check rejects, before a
// cache could hand it out to a second owner, a block start past its span's carved end above all.
//
// A malloc(64)/free pair in a loop measures 81 instructions under callgrind (80.1: 79.1 before
// the memory tags' add, the same with the heap profile's countdown, which malloc's countdown to
// the clock became, 73.0 before the countdown), the loop's own and the looks at the clock
// and decay steps that a single-threaded program's calls run included:
// scripts/fastpath-instructions.sh, which a test holds to this figure.
inline void deallocate(void* p) {
  if (region_owns(p)) [[likely]] {
    const HandedOutBlock block = decode_handed_out_block(p);
    if (!block.handed_out) [[unlikely]]
      return deallocate_shared(p);
    pool_deallocate(p, block.bin);
    return;
  }
  free_unpooled(p);  // also nullptr, which it ignores
}

void* allocate_zeroed(std::size_t size, const void* site = nullptr);
// p is not nullptr and size is not 0.
void* reallocate(void* p, std::size_t size, const void* site = nullptr);
// `alignment` is a power of two.
void* allocate_aligned(std::size_t alignment, std::size_t size, const void* site = nullptr);
std::size_t usable_size(void* p);
// malloc_trim: gives this thread's cached blocks and every empty span back; true when memory
// was returned to the OS.
bool trim(std::size_t pad);

}  // namespace poolalloc::internal
