#include <poolalloc/detail/slot_bitmap.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

namespace {

using poolalloc::detail::SlotBitmap;

TEST(SlotBitmap, TakesSlotsInAscendingOrderThenNone) {
  SlotBitmap bits;
  bits.add_free_slots(130);
  for (std::uint32_t slot = 0; slot < 130; ++slot) ASSERT_EQ(bits.take_lowest_free(), slot);
  EXPECT_EQ(bits.take_lowest_free(), SlotBitmap::kNone);
}

TEST(SlotBitmap, AlwaysTakesTheLowestFreeSlotAcrossSummaryWords) {
  const unsigned seed = 11;
  std::printf("seed %u\n", seed);
  std::mt19937 random(seed);
  SlotBitmap bits;
  bits.add_free_slots(10'000);  // three summary words
  std::set<std::uint32_t> free_slots;
  for (std::uint32_t slot = 0; slot < 10'000; ++slot) free_slots.insert(slot);
  for (int step = 0; step < 50'000; ++step) {
    if (random() % 2 == 0 && !free_slots.empty()) {
      ASSERT_EQ(bits.take_lowest_free(), *free_slots.begin()) << "step " << step;
      free_slots.erase(free_slots.begin());
    } else {
      const auto slot = static_cast<std::uint32_t>(random() % 10'000);
      if (free_slots.contains(slot)) continue;
      bits.release(slot);
      free_slots.insert(slot);
    }
  }
}

TEST(SlotBitmap, GrowingAFullBitmapMakesTheNewSlotsTakable) {
  SlotBitmap bits;
  bits.add_free_slots(64);
  for (int i = 0; i < 64; ++i) (void)bits.take_lowest_free();
  ASSERT_EQ(bits.take_lowest_free(), SlotBitmap::kNone);
  bits.add_free_slots(5000);
  EXPECT_EQ(bits.take_lowest_free(), 64u);
  EXPECT_EQ(bits.size(), 5064u);
}

TEST(SlotBitmap, WalksUsedSlotsInOrderAndFindsTheHighestBelowALimit) {
  SlotBitmap bits;
  bits.add_free_slots(200);
  for (int i = 0; i < 200; ++i) (void)bits.take_lowest_free();
  for (std::uint32_t slot = 0; slot < 200; ++slot) {
    if (slot % 7 != 0) bits.release(slot);
  }
  std::vector<std::uint32_t> used;
  bits.for_each_used([&](std::uint32_t slot) { used.push_back(slot); });
  std::vector<std::uint32_t> expected;
  for (std::uint32_t slot = 0; slot < 200; slot += 7) expected.push_back(slot);
  EXPECT_EQ(used, expected);
  EXPECT_EQ(bits.highest_used_below(200), 196u);
  EXPECT_EQ(bits.highest_used_below(196), 189u);
  EXPECT_EQ(bits.highest_used_below(1), 0u);
  EXPECT_EQ(bits.highest_used_below(0), SlotBitmap::kNone);
  EXPECT_TRUE(bits.is_free(1));
  EXPECT_FALSE(bits.is_free(7));
}

TEST(SlotBitmap, SlotsRemovedFromTheEndAreNeverTakenUntilSlotsJoinAgain) {
  SlotBitmap bits;
  bits.add_free_slots(200);
  for (std::uint32_t slot = 0; slot < 200; ++slot) ASSERT_EQ(bits.take_lowest_free(), slot);
  for (std::uint32_t slot = 100; slot < 200; ++slot) bits.release(slot);
  bits.release(40);
  bits.remove_slots_from(130);  // a word cut in the middle
  EXPECT_EQ(bits.size(), 130u);
  EXPECT_EQ(bits.take_lowest_free(), 40u);
  for (std::uint32_t slot = 100; slot < 130; ++slot) ASSERT_EQ(bits.take_lowest_free(), slot);
  EXPECT_EQ(bits.take_lowest_free(), SlotBitmap::kNone);
  bits.release(120);
  bits.remove_slots_from(120);
  EXPECT_EQ(bits.take_lowest_free(), SlotBitmap::kNone);
  bits.add_free_slots(10);
  for (std::uint32_t slot = 120; slot < 130; ++slot) ASSERT_EQ(bits.take_lowest_free(), slot);
  EXPECT_EQ(bits.take_lowest_free(), SlotBitmap::kNone);
  std::uint32_t used = 0;
  bits.for_each_used([&](std::uint32_t) { ++used; });
  EXPECT_EQ(used, 130u);
}

}  // namespace
