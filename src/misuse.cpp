#include "misuse.hpp"

#include <string_view>

#include "bins.hpp"
#include "pool_region.hpp"
#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

void report_invalid_pointer(const char* operation, const void* p) {
  const unsigned cls = span_class_of(p);
  detail::Message message;
  message << "poolalloc: " << operation << "(" << p << "): ";
  if (cls >= kClassCount) {
    message << "not a block: it lies in a part of the pool region that serves no size class";
  } else {
    const std::uint32_t size = class_size(cls);
    const std::uintptr_t offset_in_span = internal::offset_in_span(p);
    const std::uintptr_t whole_blocks_end = kSpanSize / size * size;
    if (offset_in_span >= whole_blocks_end) {
      message << "not a block: it points " << std::uint64_t{offset_in_span - whole_blocks_end}
              << " bytes past the last whole " << size << "-byte block of its span (size class "
              << cls << "), into the " << std::uint64_t{kSpanSize - whole_blocks_end}
              << " bytes at the span's end that no block uses";
    } else if (offset_in_span % size == 0) {
      message << "not a block that malloc handed out: the " << size << "-byte block (size class "
              << cls << ") lies in its span's never-used range";
    } else {
      const std::uintptr_t into_block = offset_in_span % size;
      message << "not a block: it points " << std::uint64_t{into_block} << " bytes into the "
              << size << "-byte block at "
              << reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) - into_block)
              << " (size class " << cls << ")";
    }
  }
  detail::fatal(message);
}

void report_double_free(const char* operation, const void* p, unsigned bin) {
  const unsigned cls = bin_class(bin);
  detail::Message message;
  message << "poolalloc: " << operation << "(" << p << "): ";
  if (std::string_view(operation) == "realloc")
    message << "the " << class_size(cls) << "-byte block (size class " << cls
            << ") is free already";
  else
    message << "double free of the " << class_size(cls) << "-byte block (size class " << cls << ")";
  detail::fatal(message);
}

void report_double_free_outside_pools(const char* operation, const void* p, std::size_t size) {
  detail::Message message;
  message << "poolalloc: " << operation << "(" << p << "): double free of the "
          << std::uint64_t{size} << "-byte block above the pools";
  detail::fatal(message);
}

void report_double_free_of_sampled_block(const char* operation, const void* p, std::size_t size) {
  detail::Message message;
  message << "poolalloc: " << operation << "(" << p << "): double free of the "
          << std::uint64_t{size} << "-byte block of a heap-profile sample";
  detail::fatal(message);
}

void report_foreign_pointer(const char* operation, const void* p) {
  detail::Message message;
  message << "poolalloc: " << operation << "(" << p
          << "): not a block: not the pools', nor a live block of the C runtime's heap (one it "
             "freed already, or another allocator's)";
  detail::fatal(message);
}

void report_corrupted_free_list(const void* p, unsigned bin) {
  const unsigned cls = bin_class(bin);
  detail::Message message;
  message << "poolalloc: the free list of size class " << cls << " (" << class_size(cls)
          << "-byte blocks) is corrupted: it leads to " << p
          << ", which is not a free block of the class (a freed block was written to: a use after "
             "free, or an overflow of the block "
             "before it)";
  detail::fatal(message);
}

void report_out_of_memory_without_cxx_runtime(std::size_t size) {
  detail::Message message;
  message << "poolalloc: operator new(" << std::uint64_t{size}
          << "): out of memory, and no C++ runtime is loaded in the global scope to throw "
             "std::bad_alloc";
  detail::fatal(message);
}

}  // namespace poolalloc::internal
