// The OS layer: the allocator's only calls of mmap, munmap, madvise, mincore and the other
// system calls below; nothing else in src/ makes them. (Reports and options open, read and
// write files where they are made.)
//
// One error convention: a call that can fail returns nullptr or false (a byte count: what it
// counted before the failure) and leaves the reason in errno; a call whose failure leaves the
// caller nothing to do returns nothing. None prints, aborts or allocates, and none restores
// errno: a caller that must keep it (free() does) saves it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

inline constexpr std::size_t kPageSize = 4096;

// Memory.

// Maps `bytes` of zero-filled read-write memory, for metadata.
void* os_map(std::size_t bytes);

// The region's mappings (MAP_NORESERVE: no swap is set aside). The first maps exactly at
// `address`, never over an existing mapping: nullptr if the range is taken (EEXIST) or the
// address space is exhausted (ENOMEM, also under RLIMIT_AS); the second where the kernel
// chooses.
void* os_map_noreserve_at(std::uintptr_t address, std::size_t bytes);
void* os_map_noreserve(std::size_t bytes);

// Maps `bytes` of the open file `fd` from its start, read-only and private.
const void* os_map_file(int fd, std::size_t bytes);

void os_unmap(void* start, std::size_t bytes);

// Gives the pages of [start, start + bytes) back to the OS; they read as zeros afterwards.
void os_decommit(void* start, std::size_t bytes);

// Bytes of [start, start + bytes) resident in memory.
std::size_t os_resident_bytes(const void* start, std::size_t bytes);

// Randomness.

// Random bits (getrandom, else the kernel's AT_RANDOM bytes mixed with the clock), without
// allocating: for placing the region and for the free-block key.
std::uint64_t os_random_bits();

// splitmix64's finaliser: spreads every bit of x over the result.
std::uint64_t mix_bits(std::uint64_t x);

}  // namespace poolalloc::internal
