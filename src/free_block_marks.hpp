// Marks of free blocks. A pooled block that is free carries in word 1 a mark that says where it
// waits, with a random key chosen once per process:
//
//   in a thread cache, a central stack or its span (span_blocks.hpp):   block ^ key
//   in the orphan list (given back while fork() holds its class's lock): block ^ key ^ 2^33
//
// free() finds a mark in a block that is free already and reports a double free, wherever the
// block waits; every path that hands a block out clears word 1, so a live block holds a mark only
// if the program wrote it there. The two marks differ only in their upper half, so the free
// fast path compares the lower half alone, one compare as for one mark, and leaves the rare
// match to the slow path's whole check (is_marked_free). Blocks are at least 16 bytes, so word 1
// always exists. A mark depends on the block's address, so one copied elsewhere (stale bytes of a
// span carved again for another class, moved by a program) never passes for another's.
//
// The thread caches and the central stacks keep free blocks as arrays of pointers, and the spans
// as bitmaps, all outside the blocks, so nothing a program writes into a freed block can redirect
// a later malloc. One list runs through free blocks: the rare orphan list, whose word 0 is
//
//     word 0: next ^ mark
//
// safe-linked as glibc does and keyed: a forged or damaged link leads to a block without the
// orphan mark, which is reported (check_orphan) instead of followed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "off_page_start.hpp"

namespace poolalloc::internal {

// The bytes at the start of a free block that hold its mark (and an orphan's link): what must
// survive when the rest of a free block's pages go back to the OS.
inline constexpr std::size_t kFreeBlockHeader = 2 * sizeof(std::uintptr_t);

// Its lower half is never 0 once chosen.
inline constinit OffPageStart<std::uintptr_t> g_free_block_key_off_page_start;
inline constinit std::uintptr_t& g_free_block_key = g_free_block_key_off_page_start.value;

// Chooses the key (getrandom, or the kernel's AT_RANDOM bytes hashed); once, at
// initialisation, before any block is handed out. Allocates nothing.
void choose_free_block_key();

inline std::uintptr_t* words_of(void* block) {
  return static_cast<std::uintptr_t*>(block);
}

// Where a free block waits (see above): what its mark adds to `block ^ key`.
enum class Waits : std::uintptr_t {
  kFree = 0,
  kOrphaned = std::uintptr_t{1} << 33,
};

inline std::uintptr_t mark_of(const void* block, Waits where = Waits::kFree) {
  return reinterpret_cast<std::uintptr_t>(block) ^ g_free_block_key ^
         static_cast<std::uintptr_t>(where);
}

// The free fast path's check: whether `word` may be one of the block's marks, given its
// free mark. Rarely true of a live block (its lower half matching), which the slow path
// then tells apart with is_marked_free.
inline bool may_be_a_mark(std::uintptr_t word, std::uintptr_t mark) {
  return static_cast<std::uint32_t>(word) == static_cast<std::uint32_t>(mark);
}

inline bool carries_mark(void* block, Waits where) {
  return words_of(block)[1] == mark_of(block, where);
}

// Whether the block carries any of its marks: free already, wherever it waits.
inline bool is_marked_free(void* block) {
  const std::uintptr_t where = words_of(block)[1] ^ mark_of(block);
  return where == static_cast<std::uintptr_t>(Waits::kFree) ||
         where == static_cast<std::uintptr_t>(Waits::kOrphaned);
}

inline void set_mark(void* block, Waits where = Waits::kFree) {
  words_of(block)[1] = mark_of(block, where);
}

// The block leaves the free lists for the program.
inline void clear_mark(void* block) {
  words_of(block)[1] = 0;
}

// The orphan list: marks the block orphaned and links it to `next` (nullptr ends the list).
inline void mark_orphaned(void* block, void* next) {
  const std::uintptr_t mark = mark_of(block, Waits::kOrphaned);
  words_of(block)[1] = mark;
  words_of(block)[0] = reinterpret_cast<std::uintptr_t>(next) ^ mark;
}

// The next block of an orphan's link; only for a block that check_orphan() accepted.
inline void* next_orphan(void* block) {
  return reinterpret_cast<void*>(words_of(block)[0] ^ mark_of(block, Waits::kOrphaned));
}

// Reports a corrupted free list unless `block` is the start of a block of bin `bin` in the
// pool region and carries its orphan mark. Before the orphan list's link is followed.
void check_orphan(void* block, unsigned bin);

}  // namespace poolalloc::internal
