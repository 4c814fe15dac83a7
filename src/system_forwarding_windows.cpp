// The system allocator on Windows: the C runtime's heap (msvcrt's or the UCRT's, whichever the
// program links), behind the pools as glibc is on Linux (system_forwarding.hpp).
//
// Its free cannot take every pointer: a pointer that is neither a block of the pools nor one the
// C runtime's heap handed out would corrupt the heap (or, in a release build of Windows, be
// ignored). So a pointer outside the pool region is validated first (HeapValidate of the C
// runtime's heap, for that one block, under the heap's lock) and reported as not a block, as
// glibc's free reports it on Linux. Blocks that the C runtime's own functions allocated (strdup,
// _getcwd, getline's buffers) pass and go to its free, so a program may free them with
// poolalloc_free or delete them as it would with free.
//
// Aligned requests beyond the pools (an alignment above 16 and a size above 32 KiB, or an
// alignment above 32 KiB) are carved from a larger malloc block, as _aligned_malloc does: two
// words before the aligned block hold the malloc block and a mark (the block's address xored
// with a constant), by which free and realloc tell them from the C runtime's own blocks (its free
// could not take them, nor _aligned_free its plain blocks).
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <malloc.h>
#include <windows.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "misuse.hpp"
#include "os.hpp"
#include "system_forwarding.hpp"

namespace poolalloc::internal {
namespace {

constexpr std::uintptr_t kAlignedMark = 0x9e3779b97f4a7c15u;
constexpr std::size_t kHeaderWords = 2;  // the malloc block, the mark

std::uintptr_t* header_of(void* p) {
  return static_cast<std::uintptr_t*>(p) - kHeaderWords;
}

// Whether the two words before p can be read: p is not at a page's start, or the page before
// it is committed.
bool header_readable(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % kPageSize != 0) return true;
  MEMORY_BASIC_INFORMATION info{};
  return VirtualQuery(reinterpret_cast<const void*>(address - kPageSize), &info, sizeof info) !=
             0 &&
         info.State == MEM_COMMIT && (info.Protect & (PAGE_NOACCESS | PAGE_GUARD)) == 0;
}

// The malloc block that aligned block p was carved from, or nullptr when p is not such a block.
// Only blocks aligned to 32 or more are (system_heap_memalign serves alignments above 16).
void* carved_from(void* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0 || !header_readable(p)) return nullptr;
  const std::uintptr_t* header = header_of(p);
  if (header[1] != (reinterpret_cast<std::uintptr_t>(p) ^ kAlignedMark)) return nullptr;
  return reinterpret_cast<void*>(header[0]);
}

// The C runtime's malloc, calloc and realloc do not all set errno when they fail (msvcrt's calloc
// and realloc under wine leave it as it was): a failure is ENOMEM, as glibc's are.
void* or_enomem(void* p) {
  if (p == nullptr) errno = ENOMEM;
  return p;
}

bool heap_validates(void* p) {
  return HeapValidate(reinterpret_cast<HANDLE>(_get_heap_handle()), 0, p);
}

// A block of the C runtime's heap, or the report that p is not one, naming `operation`.
void check_heap_block(void* p, const char* operation) {
  if (!heap_validates(p)) report_foreign_pointer(operation, p);
}

}  // namespace

bool system_heap_holds(void* p) {
  return carved_from(p) == nullptr && heap_validates(p);
}

void* system_heap_malloc(std::size_t size) {
  return or_enomem(std::malloc(size));
}

void* system_heap_calloc(std::size_t size) {
  return or_enomem(std::calloc(1, size));
}

void* system_heap_memalign(std::size_t alignment, std::size_t size) {
  const std::size_t slack = alignment - 1 + kHeaderWords * sizeof(std::uintptr_t);
  if (size > SIZE_MAX - slack) return or_enomem(nullptr);
  void* block = or_enomem(std::malloc(size + slack));
  if (block == nullptr) return nullptr;
  const std::uintptr_t aligned = (reinterpret_cast<std::uintptr_t>(block) +
                                  kHeaderWords * sizeof(std::uintptr_t) + alignment - 1) &
                                 ~(alignment - 1);
  void* p = reinterpret_cast<void*>(aligned);
  header_of(p)[0] = reinterpret_cast<std::uintptr_t>(block);
  header_of(p)[1] = aligned ^ kAlignedMark;
  return p;
}

void system_heap_free(void* p) {
  if (void* block = carved_from(p)) {
    header_of(p)[1] = 0;  // a second free finds no mark, and the heap then reports it
    std::free(block);
    return;
  }
  check_heap_block(p, "free");
  std::free(p);
}

std::size_t system_usable_size(void* p) {
  if (void* block = carved_from(p))
    return _msize(block) -
           static_cast<std::size_t>(static_cast<char*>(p) - static_cast<char*>(block));
  check_heap_block(p, "malloc_usable_size");
  return _msize(p);
}

void* system_heap_realloc(void* p, std::size_t size) {
  if (carved_from(p) == nullptr) {
    check_heap_block(p, "realloc");
    void* moved = std::realloc(p, size);
    return size == 0 ? moved : or_enomem(moved);  // realloc(p, 0) frees p
  }
  // The C runtime's realloc cannot move an aligned block: a new one, as glibc's realloc of a
  // memalign block does (the alignment is not kept).
  void* moved = or_enomem(std::malloc(size));
  if (moved == nullptr) return nullptr;
  const std::size_t old_size = system_usable_size(p);
  std::memcpy(moved, p, old_size < size ? old_size : size);
  system_heap_free(p);
  return moved;
}

// _heapmin gives the heap's free pages back; it does not say whether there were any.
int system_trim(std::size_t) {
  _heapmin();
  return 0;
}

}  // namespace poolalloc::internal
