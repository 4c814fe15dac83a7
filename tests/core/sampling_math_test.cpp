// The heap profile's logarithm and sample chance (src/sampling_math.hpp) against libm's, over
// the ranges the sampler uses: uniform draws in (0, 1], and sizes from 1 byte to far past the
// mean.
#include "sampling_math.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace poolalloc::internal {
namespace {

TEST(SamplingMath, NaturalLogMatchesLibmOverTheUniformDraws) {
  for (double x = 0x1.0p-53; x <= 1.0; x *= 1.0137)
    EXPECT_NEAR(natural_log(x), std::log(x), 1e-13 * std::max(1.0, std::fabs(std::log(x)))) << x;
  EXPECT_EQ(natural_log(1.0), 0.0);
}

TEST(SamplingMath, ChanceOfSampleMatchesLibmFromOneByteToFarPastTheMean) {
  const double mean = 512 * 1024;
  for (double size = 1; size < 64 * mean; size *= 1.07) {
    const double expected = -std::expm1(-size / mean);
    EXPECT_NEAR(chance_of_sample(size / mean), expected, 1e-13 * expected) << size;
  }
  EXPECT_EQ(chance_of_sample(0), 0.0);
  EXPECT_EQ(chance_of_sample(100), 1.0);
}

}  // namespace
}  // namespace poolalloc::internal
