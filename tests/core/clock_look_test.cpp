// A thread's look at the clock (decay_requests.hpp, decay.cpp) without the decay thread: its frees
// count toward a mass free by what they gave the central lists less what the refills took back,
// its own and other threads'. The core tests run with a period of an hour (no_decay_environment):
// no step runs between two looks of a test.
#include <gtest/gtest.h>

#include <cstdint>

#include "decay_requests.hpp"

namespace {

using namespace poolalloc::internal;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// A new thread's look, after one look at the clock that has seen every step run so far.
ClockLook settled_look() {
  ClockLook look = new_clock_look();
  look_at_clock(look);
  return look;
}

TEST(ClockLook, FreesThatNoRefillTakesBackCountTowardAMassFree) {
  ClockLook freeing = settled_look();
  note_bytes_given(freeing, 4 * kMiB);
  look_at_clock(freeing);
  EXPECT_EQ(freeing.freed_bytes, 4 * kMiB);
  EXPECT_NE(freeing.freed_past_unsettled_ms, 0u);  // past kUnsettledBytes: a mass free 8 ms on
}

TEST(ClockLook, FreesThatAnotherThreadsRefillsTakeBackAreNoMassFree) {
  ClockLook consumer = settled_look();
  ClockLook producer = settled_look();
  for (int batch = 0; batch < 16; ++batch) {
    note_bytes_given(consumer, kMiB);
    note_bytes_taken(producer, kMiB);
    look_at_clock(consumer);
    EXPECT_EQ(consumer.freed_bytes, 0);
    EXPECT_EQ(consumer.freed_past_unsettled_ms, 0u);
    EXPECT_FALSE(consumer.mass_free);
  }
}

TEST(ClockLook, OtherThreadsRefillsTakeBackNoMoreThanTheThreadGave) {
  ClockLook consumer = settled_look();
  ClockLook producer = settled_look();
  note_bytes_given(consumer, 3 * kMiB);
  note_bytes_taken(producer, 1 * kMiB);
  look_at_clock(consumer);
  EXPECT_EQ(consumer.freed_bytes, 2 * kMiB);
  note_bytes_taken(producer, 5 * kMiB);
  look_at_clock(consumer);
  EXPECT_EQ(consumer.freed_bytes, 0);
}

}  // namespace
