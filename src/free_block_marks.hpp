// Marks of free blocks. A pooled block that is free (in a thread cache, the central stack of
// its class or back in its span) carries its mark in word 1:
//
//   word 1: block ^ key
//
// with a random key chosen once per process. free() finds the mark in a block that is free
// already and reports a double free; every path that hands a block out clears word 1, so a live
// block holds its own mark only if the program wrote it there. Blocks are at least 16 bytes,
// so word 1 always exists. A mark depends on the block's address, so one copied elsewhere
// (stale bytes of a span carved again for another class, moved by a program) never passes for
// another's.
//
// The thread caches and the central stacks keep free blocks as arrays of pointers, outside the
// blocks, so nothing a program writes into a freed block can redirect a later malloc. Links
// through free blocks remain in two places, both checked before they are followed: a span's free
// list (indices in the first 4 bytes, see central_lists.cpp) and the rare list of blocks given
// back while fork() holds a class's lock, whose word 0 is
//
//   word 0: next ^ mark
//
// safe-linked as glibc does and keyed too: a forged or damaged link leads to a block without its
// mark, which is reported (check_free_block) instead of followed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

// The bytes at the start of a free block that hold its link and its mark: what must survive when
// the rest of a free block's pages go back to the OS.
inline constexpr std::size_t kFreeBlockHeader = 2 * sizeof(std::uintptr_t);

// Never 0 once chosen.
inline constinit std::uintptr_t g_free_block_key = 0;

// Chooses the key (getrandom, or the kernel's AT_RANDOM bytes hashed); once, at
// initialisation, before any block is handed out. Allocates nothing.
void choose_free_block_key();

inline std::uintptr_t* words_of(void* block) {
  return static_cast<std::uintptr_t*>(block);
}

inline std::uintptr_t mark_of(const void* block) {
  return reinterpret_cast<std::uintptr_t>(block) ^ g_free_block_key;
}

inline bool is_marked_free(void* block) {
  return words_of(block)[1] == mark_of(block);
}

// Marks the block free.
inline void set_mark(void* block) {
  words_of(block)[1] = mark_of(block);
}

// Marks the block free and links it to `next` (nullptr ends a list).
inline void mark_free(void* block, void* next) {
  const std::uintptr_t mark = mark_of(block);
  words_of(block)[1] = mark;
  words_of(block)[0] = reinterpret_cast<std::uintptr_t>(next) ^ mark;
}

// The next block of a free block's link; only for a block that is_marked_free().
inline void* next_free(void* block) {
  return reinterpret_cast<void*>(words_of(block)[0] ^ mark_of(block));
}

// Reports a corrupted free list unless `block` is the start of a block of class `cls` in the
// pool region and carries its free mark. For the slow paths, before they follow a link.
void check_free_block(void* block, unsigned cls);

// The block leaves the free lists for the program.
inline void clear_mark(void* block) {
  words_of(block)[1] = 0;
}

}  // namespace poolalloc::internal
