// Marks of free blocks. A pooled block that is free (in a thread cache, a batch of the central
// lists or back in its span) carries two words:
//
//   word 0: the link to the next free block, stored as next ^ mark
//   word 1: its mark, block ^ key
//
// with a random key chosen once per process. free() finds the mark in a block that is free
// already and reports a double free; every path that hands a block out clears word 1, so a live
// block holds its own mark only if the program wrote it there. Blocks are at least 16 bytes,
// so word 1 always exists.
//
// The link is safe-linked as glibc does (mangled with the link's address), and also with the
// key: a blind overflow from the block before cannot forge it, and a forged or damaged link
// leads to a block without its mark, which malloc reports before handing it out (the fast
// path) or before following it (the slow paths, which also check that it is a block of the
// class). A mark depends on the block's address, so one copied elsewhere (stale bytes of a
// span carved again for another class, moved by a program) never passes for another's.
//
// The mark is the link's mask too, so that malloc and free compute one value (one load of the
// key, one xor) for both words. A second, independent key for the link would cost one more xor
// each way; what it would add is small: a reader of freed memory learns the key from any mark
// whose block address it knows, and then can forge links with either scheme. What the shared
// mask gives such a reader besides is the next pointer itself (word 0 ^ word 1).
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
