// Blocks of the C runtime's malloc given to poolalloc's C API and delete, as a program gives
// strdup's: owned by none of the pools, sized, freed, grown and deleted through the C runtime.
// The release build's tests and the debug build's run it alike (docs/windows.md).
#pragma once

#include <gtest/gtest.h>
#include <poolalloc/poolalloc.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "opaque_pointer.hpp"

inline void expect_c_runtime_blocks_taken() {
  char* copy = strdup("a string the C runtime allocated");
  EXPECT_FALSE(poolalloc_owns(copy));
  EXPECT_GE(poolalloc_usable_size(copy), std::strlen(copy) + 1);
  poolalloc_free(copy);
  char* grown = static_cast<char*>(poolalloc_realloc(strdup("grow me"), 100000));
  ASSERT_NE(grown, nullptr);
  EXPECT_STREQ(grown, "grow me");
  poolalloc_free(grown);
  ::operator delete(opaque(std::malloc(32)));
}
