// Out of address space where the pools want it: the program reserves [2 TiB, 40 TiB), every
// place the region may take, before poolalloc's constructor runs. poolalloc then maps a region of
// one step (2 MiB) wherever Windows puts it, which will not grow, and sends what it cannot hold to
// the C runtime's heap. Exits with 0 when every block was served, written, and freed, some by
// the pools and the rest by the C runtime.
#include <poolalloc/poolalloc.h>
#include <windows.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr std::uintptr_t low = std::uintptr_t{2} << 40, high = std::uintptr_t{40} << 40;

// Before poolalloc's constructor, which places the region (priority 101 runs before the default).
// In steps of 1 TiB (wine refuses one reservation of 38 TiB), and of 1 GiB, the region's
// alignment, in a step where something is mapped already (wine's own reservations).
__attribute__((constructor(101))) void take_the_regions_places() {
  constexpr std::uintptr_t tib = std::uintptr_t{1} << 40, gib = std::uintptr_t{1} << 30;
  const auto reserve = [](std::uintptr_t place, std::uintptr_t bytes) {
    return VirtualAlloc(reinterpret_cast<void*>(place), bytes, MEM_RESERVE, PAGE_NOACCESS) !=
           nullptr;
  };
  for (std::uintptr_t place = low; place < high; place += tib) {
    if (reserve(place, tib)) continue;
    for (std::uintptr_t part = place; part < place + tib; part += gib) reserve(part, gib);
  }
}

}  // namespace

int main() {
  // 64 MiB in blocks of 1 KiB: 32 times what the small region holds. The array of pointers is
  // the C runtime's, so that the blocks alone count.
  constexpr int count = 65536;
  auto** blocks = static_cast<char**>(std::malloc(count * sizeof(char*)));
  int pooled = 0, inside_taken_range = 0;
  for (int i = 0; i < count; ++i) {
    blocks[i] = new char[1024];
    std::memset(blocks[i], i & 0xff, 1024);
    pooled += poolalloc_owns(blocks[i]) != 0;
    const auto address = reinterpret_cast<std::uintptr_t>(blocks[i]);
    inside_taken_range += address >= low && address < high;
  }
  int intact = 0;
  for (int i = 0; i < count; ++i) {
    intact += blocks[i][1023] == static_cast<char>(i & 0xff);
    delete[] blocks[i];
  }
  std::free(blocks);
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  std::printf(
      "%d blocks: %d from the pools, %d from the C runtime, %d intact, %d in the taken range;"
      " %llu bytes held by the size classes\n",
      count, pooled, count - pooled, intact, inside_taken_range,
      static_cast<unsigned long long>(stats.bytes_held));
  const bool ok = pooled > 0 && pooled < count && intact == count && inside_taken_range == 0 &&
                  stats.bytes_held <= (std::uint64_t{2} << 20);
  return ok ? 0 : 1;
}
