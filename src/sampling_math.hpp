// The two functions of the heap profile's sampling that need a logarithm or an exponential,
// written here: libm is not among the libraries a program gets with poolalloc (a preloaded
// library that loads another is seen in the program's maps). Both are accurate to a few units
// in the 15th digit over the ranges the sampler uses (tests/core/sampling_math_test.cpp), far
// below what sampling itself varies by.
#pragma once

#include <bit>
#include <cstdint>

namespace poolalloc::internal {

// ln(x) for a finite x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m - 1) / (m + 1), |s| < 0.172.
inline double natural_log(double x) {
  auto bits = std::bit_cast<std::uint64_t>(x);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ~(std::uint64_t{0x7ff} << 52)) | (std::uint64_t{1023} << 52);
  double m = std::bit_cast<double>(bits);  // in [1, 2)
  if (m > 1.4142135623730951) {
    m /= 2;
    ++exponent;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double term = s, sum = 0;
  for (int k = 1; k <= 29; k += 2) {
    sum += term / k;
    term *= s2;
  }
  return 2 * sum + exponent * 0.6931471805599453;
}

// 1 - e^(-x) for x >= 0, without the cancellation of 1 - exp(-x) near 0: the chance that an
// allocation of x mean distances holds a sample point.
inline double chance_of_sample(double x) {
  if (x >= 40) return 1;  // e^-40 is below the last digit
  if (x < 0.5) {          // x - x^2/2! + x^3/3! - ...
    double term = x, sum = 0;
    for (int n = 1; n <= 20; ++n) {
      sum += term;
      term *= -x / (n + 1);
    }
    return sum;
  }
  // e^-x = (e^(-x/2^k))^(2^k) with x/2^k below 1/2, whose series converges fast.
  int halvings = 0;
  double y = x;
  while (y >= 0.5) {
    y /= 2;
    ++halvings;
  }
  double term = 1, e = 0;
  for (int n = 0; n <= 20; ++n) {
    e += term;
    term *= -y / (n + 1);
  }
  for (int i = 0; i < halvings; ++i) e *= e;
  return 1 - e;
}

}  // namespace poolalloc::internal
