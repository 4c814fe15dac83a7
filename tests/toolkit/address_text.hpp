// An address as the toolkit's reports print it, for matching them in death tests.
#pragma once

#include <cstdio>
#include <string>

inline std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}
