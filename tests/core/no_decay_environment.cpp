// The core tests count blocks exactly. A decay step (decay.hpp), which the slow path of any thread
// runs once a step is due, or the decay thread in the background, would move them behind a
// test's back: before any test, and so before the first slow path starts the clock, the decay
// thread is turned off (POOLALLOC_DECAY_THREAD=0) and the period set to the longest
// POOLALLOC_DECAY_MS allows: an hour, far longer than the tests run.
#include <gtest/gtest.h>

#include "options.hpp"

namespace {

class NoDecay : public ::testing::Environment {
 public:
  void SetUp() override {
    poolalloc::internal::g_options.decay_thread = false;
    poolalloc::internal::g_options.decay_ms = std::size_t{3600} * 1000;
  }
};

[[maybe_unused]] ::testing::Environment* const g_no_decay =
    ::testing::AddGlobalTestEnvironment(new NoDecay);

}  // namespace
