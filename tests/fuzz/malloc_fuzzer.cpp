// libFuzzer target for the drop-in malloc. poolalloc's objects are linked into this program,
// built with coverage instrumentation, so the process's malloc (the fuzzer's own included) is
// poolalloc's. Each input is read as a sequence of operations on a table of 64 slots:
// malloc, calloc, realloc, free, aligned_alloc, posix_memalign, memalign (alignments 16 to
// 64 KiB, and some invalid ones), malloc_usable_size followed by writing the whole usable
// size, and requests too large to serve. Every live block holds a pattern derived from its slot's
// seed, checked before each free and realloc and at the end of the input, when everything is
// freed; alignment is checked on return, calloc's zeroing before the pattern is written.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <array>
#include <cstring>

#include <fuzzer/FuzzedDataProvider.h>

namespace {

struct Slot {
  unsigned char* p = nullptr;
  size_t size = 0;  // bytes that hold the pattern
  uint16_t seed = 0;
};

constexpr size_t kSlots = 64;
std::array<Slot, kSlots> g_slots;

// Slot contents are compared with memcmp against fixed buffers rather than byte by byte: the
// harness's own loops would be instrumented for coverage and dominate the run time.
constexpr size_t kMaxBlock = 320 * 1024;  // above any usable size of what pick_size asks for
constexpr size_t kMaxSeed = 65535;
unsigned char g_pattern[kMaxBlock + kMaxSeed + 1];  // a slot's byte i is g_pattern[seed + i]
const unsigned char g_zeros[kMaxBlock] = {};

[[noreturn]] void fail(const char* what, const Slot& slot) {
  fprintf(stderr, "malloc_fuzzer: %s: block %p of %zu bytes\n", what, static_cast<void*>(slot.p),
          slot.size);
  abort();
}

void fill(const Slot& slot, size_t from = 0) {
  if (slot.size > kMaxBlock) fail("block larger than the pattern", slot);
  if (from < slot.size) memcpy(slot.p + from, g_pattern + slot.seed + from, slot.size - from);
}

void check(const Slot& slot, size_t n, const char* what) {
  if (n != 0 && memcmp(slot.p, g_pattern + slot.seed, n) != 0) fail(what, slot);
}

void check_alignment(const Slot& slot, size_t alignment) {
  if (reinterpret_cast<uintptr_t>(slot.p) % alignment != 0) fail("misaligned", slot);
}

void release(Slot& slot) {
  if (slot.p == nullptr) return;
  check(slot, slot.size, "damaged before free");
  if (malloc_usable_size(slot.p) < slot.size) fail("usable size shrank", slot);
  free(slot.p);
  slot = {};
}

size_t pick_size(FuzzedDataProvider& input) {
  switch (input.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      return input.ConsumeIntegralInRange<size_t>(0, 16);
    case 1:
    case 2:
    case 3:
      return input.ConsumeIntegralInRange<size_t>(0, 512);
    case 4:
    case 5:
      return input.ConsumeIntegralInRange<size_t>(0, 32 * 1024 + 64);  // around the largest class
    case 6:
      return input.ConsumeIntegralInRange<size_t>(32 * 1024 - 64, 32 * 1024 + 64);
    default:
      return input.ConsumeIntegralInRange<size_t>(0, 256 * 1024);  // the system allocator
  }
}

size_t pick_alignment(FuzzedDataProvider& input) {
  return size_t{16} << input.ConsumeIntegralInRange<int>(0, 12);  // 16 .. 64 KiB
}

// A freshly returned block: check its alignment, then give it the slot's pattern.
void adopt(Slot& slot, void* p, size_t size, size_t alignment, uint16_t seed) {
  slot = {static_cast<unsigned char*>(p), size, seed};
  check_alignment(slot, alignment);
  if (malloc_usable_size(slot.p) < size) fail("usable size below the request", slot);
  fill(slot);
}

void run_one(FuzzedDataProvider& input) {
  Slot& slot = g_slots[input.ConsumeIntegralInRange<size_t>(0, kSlots - 1)];
  const uint16_t seed = input.ConsumeIntegral<uint16_t>();
  switch (input.ConsumeIntegralInRange<int>(0, 10)) {
    case 0: {
      release(slot);
      const size_t size = pick_size(input);
      void* p = malloc(size);
      if (p == nullptr) fail("malloc failed", slot);
      adopt(slot, p, size, 16, seed);
      break;
    }
    case 1: {
      release(slot);
      const size_t count = input.ConsumeIntegralInRange<size_t>(0, 64);
      const size_t each = pick_size(input) / (count == 0 ? 1 : count);
      void* p = calloc(count, each);
      if (p == nullptr) fail("calloc failed", slot);
      const Slot zeroed{static_cast<unsigned char*>(p), count * each, 0};
      if (zeroed.size != 0 && memcmp(zeroed.p, g_zeros, zeroed.size) != 0)
        fail("calloc block not zeroed", zeroed);
      adopt(slot, p, count * each, 16, seed);
      break;
    }
    case 2: {  // realloc, also of nullptr, and to 0 (frees, returns NULL, as glibc does)
      const size_t size = pick_size(input);
      if (slot.p != nullptr) check(slot, slot.size, "damaged before realloc");
      void* p = realloc(slot.p, size);
      if (size == 0 && slot.p != nullptr) {
        if (p != nullptr) fail("realloc to 0 returned a block", slot);
        slot = {};
        break;
      }
      if (p == nullptr) fail("realloc failed", slot);
      Slot moved{static_cast<unsigned char*>(p), size < slot.size ? size : slot.size, slot.seed};
      check_alignment(moved, 16);
      check(moved, moved.size, "realloc lost the contents");
      moved.size = size;
      fill(moved, slot.p != nullptr ? (size < slot.size ? size : slot.size) : 0);
      slot = moved;
      break;
    }
    case 3:
      release(slot);
      break;
    case 4: {
      release(slot);
      const size_t alignment = pick_alignment(input);
      const size_t size = pick_size(input);
      void* p = aligned_alloc(alignment, size);
      if (p == nullptr) fail("aligned_alloc failed", slot);
      adopt(slot, p, size, alignment, seed);
      break;
    }
    case 5: {
      release(slot);
      const bool valid = input.ConsumeIntegralInRange<int>(0, 15) != 0;
      const size_t alignment =
          valid ? pick_alignment(input) : input.ConsumeIntegralInRange<size_t>(0, 100);
      const size_t size = pick_size(input);
      void* p = nullptr;
      const int error = posix_memalign(&p, alignment, size);
      const bool power_of_two = alignment != 0 && (alignment & (alignment - 1)) == 0;
      if (!power_of_two || alignment % sizeof(void*) != 0) {
        if (error != EINVAL) fail("posix_memalign accepted a bad alignment", slot);
        break;
      }
      if (error != 0 || p == nullptr) fail("posix_memalign failed", slot);
      adopt(slot, p, size, alignment, seed);
      break;
    }
    case 6: {
      release(slot);
      const size_t alignment = pick_alignment(input);
      const size_t size = pick_size(input);
      void* p = memalign(alignment, size);
      if (p == nullptr) fail("memalign failed", slot);
      adopt(slot, p, size, alignment, seed);
      break;
    }
    case 7: {  // the whole usable size is ours to write
      if (slot.p == nullptr) break;
      const size_t usable = malloc_usable_size(slot.p);
      if (usable < slot.size) fail("usable size below the request", slot);
      check(slot, slot.size, "damaged before growing to the usable size");
      const size_t old_size = slot.size;
      slot.size = usable;
      fill(slot, old_size);
      break;
    }
    case 8: {  // requests no allocator can serve fail cleanly
      const size_t huge = SIZE_MAX - input.ConsumeIntegralInRange<size_t>(0, 1 << 20);
      errno = 0;
      void* p = input.ConsumeBool() ? malloc(huge) : calloc(2, huge / 2 + 1);
      if (p != nullptr || errno != ENOMEM) fail("an impossible request did not fail", slot);
      break;
    }
    case 9:  // check a live block without touching the allocator
      if (slot.p != nullptr) check(slot, slot.size, "damaged while live");
      break;
    default: {  // a block moved between slots: one live block, one owner
      Slot& other = g_slots[input.ConsumeIntegralInRange<size_t>(0, kSlots - 1)];
      if (&other == &slot) break;
      release(other);
      other = slot;
      slot = {};
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uint64_t x = 0x9e3779b97f4a7c15u;  // xorshift: a pattern with no short period
  for (unsigned char& byte : g_pattern) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    byte = static_cast<unsigned char>(x >> 32);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  while (input.remaining_bytes() > 0) run_one(input);
  for (Slot& slot : g_slots) release(slot);
  return 0;
}
