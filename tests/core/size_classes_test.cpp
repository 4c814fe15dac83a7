#include "size_classes.hpp"

#include <gtest/gtest.h>

namespace {

using namespace poolalloc::internal;

TEST(SizeClasses, EverySizeMapsToTheSmallestClassThatHoldsIt) {
  for (std::size_t size = 0; size <= kLargestClassSize; ++size) {
    const unsigned cls = class_of(size);
    ASSERT_LT(cls, kClassCount) << size;
    ASSERT_GE(class_size(cls), size) << size;
    if (cls > 0) {
      ASSERT_LT(class_size(cls - 1), size) << size;
    }
  }
}

// Waste is at most an eighth of the block above 128 bytes; up to 128 bytes, where the 16-byte
// alignment glibc promises sets the granule, it is under 16 bytes.
TEST(SizeClasses, AreMultiplesOf16WithAtMostAnEighthWasted) {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    EXPECT_EQ(class_size(cls) % kMinAlignment, 0u) << cls;
    EXPECT_EQ(class_of(class_size(cls)), cls) << cls;
    if (cls == 0) continue;
    // The worst request of a class is one byte above the class below.
    const std::size_t waste = class_size(cls) - (class_size(cls - 1) + 1);
    if (class_size(cls) <= 128) {
      EXPECT_LT(waste, kMinAlignment) << cls;
    } else {
      EXPECT_LE(8 * waste, class_size(cls)) << cls;
    }
  }
  EXPECT_EQ(class_size(kClassCount - 1), kLargestClassSize);
}

TEST(SizeClasses, EveryPowerOfTwoUpToTheLargestIsAClass) {
  for (std::size_t size = 16; size <= kLargestClassSize; size *= 2)
    EXPECT_EQ(class_size(class_of(size)), size);
}

}  // namespace
