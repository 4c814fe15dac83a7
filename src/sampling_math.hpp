// The two functions of the heap profile's sampling that need a logarithm or an exponential,
// written here: libm is not among the libraries a program gets with poolalloc (a preloaded
// library that loads another is seen in the program's maps). Both are accurate to a few units
// in the 15th digit over the ranges the sampler uses (tests/core/sampling_math_test.cpp), far
// below what sampling itself varies by.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace poolalloc::internal {

// The coefficients of both series, worked out by the compiler: multiplications by them (in a tree
// for the logarithm's, below; in Horner's form for the exponential's), where dividing term by term
// cost a division per term (some 20 cycles each).
inline constexpr auto kOddReciprocals = [] {  // 1/1, 1/3, 1/5, ...
  std::array<double, 8> c{};
  for (std::size_t k = 0; k < c.size(); ++k) c[k] = 1.0 / static_cast<double>(2 * k + 1);
  return c;
}();
inline constexpr auto kInverseFactorials = [] {  // 1/1!, 1/2!, 1/3!, ...
  std::array<double, 16> c{};
  double factorial = 1;
  for (std::size_t k = 0; k < c.size(); ++k) {
    factorial *= static_cast<double>(k + 1);
    c[k] = 1.0 / factorial;
  }
  return c;
}();

// ln(x) for a normal x > 0: x = m * 2^k with m in [sqrt(1/2), sqrt(2)), then
// ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m - 1) / (m + 1), |s| < 0.172: the
// 8 terms kept leave out less than s^17/17 < 2e-14 of s. No branch and no chain that need not be
// one: the sampler's draw is on the path of the program's next mallocs (a processor's reorder
// buffer does not hold the ~100 cycles that a Horner chain of 11 terms took, with a branch that
// half the draws mispredicted: about 1.5 % of the sweep rows' time at the default mean).
// - k and m from x's bits: subtracting sqrt(1/2)'s bits borrows from the exponent exactly when
//   x's mantissa lies below sqrt(1/2)'s, which is when m is x's mantissa itself and not half of it.
// - The series in z = s^2 summed as a tree (Estrin's scheme), its multiplies side by side.
inline double natural_log(double x) {
  constexpr std::uint64_t kSqrtHalfBits = 0x3fe6a09e667f3bcd;  // sqrt(1/2)'s bits as a double
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const std::int64_t k = static_cast<std::int64_t>(bits - kSqrtHalfBits) >> 52;
  const double m = std::bit_cast<double>(bits - (static_cast<std::uint64_t>(k) << 52));
  const double s = (m - 1) / (m + 1);
  const double z = s * s;
  const double z2 = z * z;
  const auto& c = kOddReciprocals;
  const double low = (c[0] + c[1] * z) + z2 * (c[2] + c[3] * z);
  const double high = (c[4] + c[5] * z) + z2 * (c[6] + c[7] * z);
  return 2 * s * (low + z2 * z2 * high) + static_cast<double>(k) * 0.6931471805599453;
}

// 1 - e^(-y) for small y >= 0 by the first `kTerms` terms of y - y^2/2! + y^3/3! - ...
template <std::size_t kTerms>
inline double one_minus_exp_series(double y) {
  double sum = kInverseFactorials[kTerms - 1];
  for (std::size_t k = kTerms - 1; k-- > 0;) sum = kInverseFactorials[k] - y * sum;
  return y * sum;
}

// 1 - e^(-y) for 0 <= y < 1/2: 16 terms leave out less than y^16/17! < 1e-19 of y. Below 1/64,
// where the requests of the pools' sizes lie at the default mean, 7 terms do: they leave out
// less than y^7/8! < 6e-18 of y.
inline double one_minus_exp_below_half(double y) {
  return y < 1.0 / 64 ? one_minus_exp_series<7>(y)
                      : one_minus_exp_series<kInverseFactorials.size()>(y);
}

// 1 - e^(-x) for x >= 0, without the cancellation of 1 - exp(-x) near 0: the chance that an
// allocation of x mean distances holds a sample point.
inline double chance_of_sample(double x) {
  if (x >= 40) return 1;  // e^-40 is below the last digit
  if (x < 0.5) return one_minus_exp_below_half(x);
  // e^-x = (e^(-x/2^k))^(2^k) with x/2^k below 1/2.
  int halvings = 0;
  double y = x;
  while (y >= 0.5) {
    y *= 0.5;
    ++halvings;
  }
  double e = 1 - one_minus_exp_below_half(y);
  for (int i = 0; i < halvings; ++i) e *= e;
  return 1 - e;
}

}  // namespace poolalloc::internal
