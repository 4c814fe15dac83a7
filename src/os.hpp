// The OS layer of the pool region: mapping, unmapping, returning and inspecting pages. One
// error convention: a failed call returns nullptr, false or 0 and leaves the reason in errno.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

inline constexpr std::size_t kPageSize = 4096;

// Maps `bytes` of zero-filled read-write memory (MAP_NORESERVE: no swap is set aside) exactly at
// `address`, never over an existing mapping; nullptr if the range is taken (EEXIST) or the
// address space is exhausted (ENOMEM, also under RLIMIT_AS).
void* os_map_noreserve_at(std::uintptr_t address, std::size_t bytes);

// The same where the kernel chooses the address.
void* os_map_noreserve(std::size_t bytes);

void os_unmap(void* start, std::size_t bytes);

// Gives the pages of [start, start + bytes) back to the OS; they read as zeros afterwards.
void os_decommit(void* start, std::size_t bytes);

// Bytes of [start, start + bytes) resident in memory; 0 if the range cannot be inspected.
std::size_t os_resident_bytes(const void* start, std::size_t bytes);

// Random bits (getrandom, else the kernel's AT_RANDOM bytes mixed with the clock), without
// allocating: for placing the region and for the free-block key.
std::uint64_t os_random_bits();

// splitmix64's finaliser: spreads every bit of x over the result.
std::uint64_t mix_bits(std::uint64_t x);

}  // namespace poolalloc::internal
