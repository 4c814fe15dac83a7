// Reads and writes, on purpose, memory that an allocator gave back: AddressSanitizer builds
// poison it, so these two accesses are left out of its checks.
#pragma once

[[gnu::no_sanitize_address]] inline unsigned char read_given_back(const void* p) {
  return *static_cast<const volatile unsigned char*>(p);
}

[[gnu::no_sanitize_address]] inline void write_given_back(void* p, unsigned char value) {
  *static_cast<volatile unsigned char*>(p) = value;
}
