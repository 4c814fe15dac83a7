// The seed of a test's random choices: a fixed value, so that every run makes the same ones, or
// the value of PA_TEST_SEED when it is set, to try others. Each test takes its seed once, in its
// body, and derives the seeds of its threads and rounds from it; the seed is printed on stdout
// (before any fork, so that a child does not print it again) and recorded as the test's "seed"
// property, so that a failure says how to replay it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace poolalloc_test {

inline std::uint64_t test_seed(std::uint64_t fixed) {
  const char* text = std::getenv("PA_TEST_SEED");
  const std::uint64_t seed =
      text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 0) : fixed;
  std::printf("seed %llu (PA_TEST_SEED=<n> runs another)\n", static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

}  // namespace poolalloc_test
