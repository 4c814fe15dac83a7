// An address as the toolkit's reports print it, for matching them in death tests: "0x" and
// lowercase hex digits without leading zeros (not %p, which the Windows C runtime prints in
// uppercase, padded with zeros). The death tests' patterns write other addresses and numbers
// with \w+: GoogleTest's regular expressions on Windows have no bracket expressions, and glibc's
// have no \d.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

inline std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return text;
}

// An address in a death test's pattern: exact where the dying child is a fork() of the test, any
// address on Windows, where the child runs the test again from its start and its heap blocks lie
// elsewhere.
inline std::string death_test_hex([[maybe_unused]] const void* p) {
#if defined(_WIN32)
  return "0x\\w+";
#else
  return hex(p);
#endif
}
