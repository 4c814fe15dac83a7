// The string table and the id table of the profile writer: numbers in the order values are first
// seen, the same number for the same value however often it comes back, and growth past the
// first capacity that keeps every number.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "dedupe_tables.hpp"

namespace {

using namespace poolalloc::internal;

Numbered add(StringTable& table, std::string_view text) {
  Numbered result;
  EXPECT_TRUE(table.find_or_add(text, result)) << text;
  return result;
}

Numbered add(IdTable& table, std::uint64_t key) {
  Numbered result;
  EXPECT_TRUE(table.find_or_add(key, result)) << key;
  return result;
}

TEST(StringTable, NumbersStringsFromZeroInTheOrderFirstSeen) {
  StringTable table;
  EXPECT_EQ(add(table, "").number, 0u);
  EXPECT_EQ(add(table, "inuse_space").number, 1u);
  EXPECT_EQ(add(table, "bytes").number, 2u);
  EXPECT_EQ(table.size(), 3u);
}

TEST(StringTable, AStringSeenAgainKeepsItsNumberAndIsNotAddedAgain) {
  StringTable table;
  const Numbered first = add(table, "render");
  add(table, "physics");
  const Numbered again = add(table, "render");
  EXPECT_TRUE(first.added);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(again.number, first.number);
  EXPECT_EQ(table.size(), 2u);
}

TEST(StringTable, StringsAreComparedByContentNotByAddress) {
  StringTable table;
  std::string text = "/usr/lib/libc.so.6";
  const Numbered first = add(table, text);
  const std::string copy = text;
  text.assign(text.size(), 'x');  // the table kept its own copy
  EXPECT_EQ(add(table, copy).number, first.number);
  EXPECT_TRUE(add(table, text).added);
  EXPECT_TRUE(add(table, "/usr/lib/libc.so").added);  // a prefix is another string
  EXPECT_TRUE(add(table, "/usr/lib/libc.so.6 ").added);
}

TEST(StringTable, KeepsEveryNumberAcrossGrowth) {
  StringTable table;
  constexpr int kStrings = 50000;  // far past the first capacity, 1,024 slots
  for (int i = 0; i < kStrings; ++i) {
    const Numbered entry = add(table, "tag-" + std::to_string(i));
    ASSERT_TRUE(entry.added) << i;
    ASSERT_EQ(entry.number, static_cast<std::uint64_t>(i));
  }
  for (int i = 0; i < kStrings; ++i) {
    const Numbered entry = add(table, "tag-" + std::to_string(i));
    ASSERT_FALSE(entry.added) << i;
    ASSERT_EQ(entry.number, static_cast<std::uint64_t>(i));
  }
  EXPECT_EQ(table.size(), static_cast<std::uint64_t>(kStrings));
}

TEST(IdTable, NumbersKeysFromOneInTheOrderFirstSeen) {
  IdTable table;
  EXPECT_EQ(add(table, 0x401235).number, 1u);
  EXPECT_EQ(add(table, 0x7f0000001000).number, 2u);
  EXPECT_EQ(add(table, 0).number, 3u);  // any key, 0 too
  EXPECT_EQ(add(table, UINT64_MAX).number, 4u);
  EXPECT_EQ(table.size(), 4u);
}

TEST(IdTable, AKeySeenAgainKeepsItsNumberAndIsNotAddedAgain) {
  IdTable table;
  add(table, 0x1000);
  const Numbered first = add(table, 0x2000);
  const Numbered again = add(table, 0x2000);
  EXPECT_TRUE(first.added);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(again.number, 2u);
  EXPECT_EQ(table.size(), 2u);
}

TEST(IdTable, KeepsEveryNumberAcrossGrowth) {
  IdTable table;
  constexpr std::uint64_t kKeys = 100000;
  // Return addresses a few bytes apart, as in one function, and far apart, as across modules.
  const auto key = [](std::uint64_t i) { return (i % 2 != 0 ? 0x7f0000000000 : 0x400000) + i * 5; };
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    const Numbered entry = add(table, key(i));
    ASSERT_TRUE(entry.added) << i;
    ASSERT_EQ(entry.number, i + 1);
  }
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    const Numbered entry = add(table, key(i));
    ASSERT_FALSE(entry.added) << i;
    ASSERT_EQ(entry.number, i + 1);
  }
}

}  // namespace
