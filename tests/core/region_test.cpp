// Pointer decoding in the pool region: which pointers are the region's (region_owns), which of
// those start a whole block of their span's class (class_of_block), and which of those malloc
// handed out, below the span's carved end (decode_handed_out_block, and the report of
// handed_out_bin_or_report). The spans
// are carved for each test and handed back at its end; the carved end is set as the central
// lists set it when their bump index moves.
#include <gtest/gtest.h>

#include <memory>

#include "allocator.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "span_carving.hpp"

namespace {

using namespace poolalloc::internal;

// A span carved for class `cls`, handed back when the test ends.
class CarvedSpan {
 public:
  explicit CarvedSpan(unsigned cls) : span_(carve_span(cls)) {}
  ~CarvedSpan() {
    if (span_ != nullptr) release_span(*span_);
  }
  CarvedSpan(const CarvedSpan&) = delete;
  CarvedSpan& operator=(const CarvedSpan&) = delete;

  [[nodiscard]] bool carved() const { return span_ != nullptr; }
  [[nodiscard]] std::byte* at(std::size_t offset) const { return span_start(*span_) + offset; }
  // As the central lists do when their bump index has handed out `blocks` blocks.
  void carve_blocks(std::uint32_t blocks, unsigned cls) const {
    carved_end_of(*span_).store(blocks * class_size(cls), std::memory_order_relaxed);
  }

 private:
  Span* span_;
};

bool handed_out(const void* p) {
  return decode_handed_out_block(p).handed_out;
}

TEST(Region, OwnsExactlyTheBytesItHasMapped) {
  const std::size_t size = g_region.size.load(std::memory_order_relaxed);
  ASSERT_NE(size, 0u) << "the pools are unavailable";
  const auto* base = reinterpret_cast<const std::byte*>(g_region.base);
  EXPECT_TRUE(region_owns(base));
  EXPECT_TRUE(region_owns(base + size - 1));
  EXPECT_FALSE(region_owns(base + size));
  EXPECT_FALSE(region_owns(base - 1));
  EXPECT_EQ(size, region_mapped_spans() * kSpanSize);
}

TEST(Region, ForeignPointersAreNotTheRegions) {
  const int on_the_stack = 0;
  const std::unique_ptr<int> from_the_system_allocator(new int(0));
  static const int in_the_data_segment = 0;
  EXPECT_FALSE(region_owns(&on_the_stack));
  EXPECT_FALSE(region_owns(from_the_system_allocator.get()));
  EXPECT_FALSE(region_owns(&in_the_data_segment));
  EXPECT_FALSE(region_owns(nullptr));
}

// Every byte offset of a span, for every class: exactly the starts of its whole blocks decode to
// the class, kSpanSize / size of them.
TEST(Region, ExactlyTheWholeBlockStartsOfASpanDecodeToItsClass) {
  for (unsigned cls = 0; cls < kClassCount; ++cls) {
    const CarvedSpan span(cls);
    ASSERT_TRUE(span.carved());
    const std::uint32_t size = class_size(cls);
    std::size_t starts = 0;
    for (std::size_t offset = 0; offset < kSpanSize; ++offset) {
      const unsigned decoded = class_of_block(span.at(offset));
      if (decoded == kClassCount) continue;
      ASSERT_EQ(decoded, cls) << "offset " << offset;
      ASSERT_EQ(offset % size, 0u) << "class " << cls << ", offset " << offset;
      ++starts;
    }
    EXPECT_EQ(starts, kSpanSize / size) << "class " << cls;
  }
}

TEST(Region, InteriorAndMisalignedPointersAreNoBlock) {
  const unsigned cls = class_of(1024);
  const CarvedSpan span(cls);
  ASSERT_TRUE(span.carved());
  span.carve_blocks(4, cls);
  const std::byte* block = span.at(2 * 1024);
  ASSERT_EQ(class_of_block(block), cls);
  ASSERT_TRUE(handed_out(block));
  for (const std::size_t into : {1, 8, 16, 512, 1023}) {
    EXPECT_EQ(class_of_block(block + into), kClassCount) << into;
    EXPECT_FALSE(handed_out(block + into)) << into;
  }
}

// 48-byte blocks leave 32 bytes at the end of a 128 KiB span: offset 2730 * 48 is a multiple of
// the block size, but no whole block starts there.
TEST(Region, AMultipleOfTheBlockSizePastTheLastWholeBlockIsNoBlock) {
  const unsigned cls = class_of(48);
  ASSERT_EQ(class_size(cls), 48u);
  const CarvedSpan span(cls);
  ASSERT_TRUE(span.carved());
  span.carve_blocks(kSpanSize / 48, cls);
  EXPECT_EQ(class_of_block(span.at(2729 * 48)), cls);
  EXPECT_TRUE(handed_out(span.at(2729 * 48)));
  EXPECT_EQ(class_of_block(span.at(2730 * 48)), kClassCount);
  EXPECT_FALSE(handed_out(span.at(2730 * 48)));
}

TEST(Region, OnlyBlocksBelowTheCarvedEndWereHandedOut) {
  const unsigned cls = class_of(256);
  const CarvedSpan span(cls);
  ASSERT_TRUE(span.carved());
  EXPECT_FALSE(handed_out(span.at(0))) << "a freshly carved span handed out nothing";
  span.carve_blocks(3, cls);
  std::size_t handed = 0;
  for (std::size_t block = 0; block < kSpanSize / 256; ++block) {
    EXPECT_EQ(class_of_block(span.at(block * 256)), cls) << block;
    handed += handed_out(span.at(block * 256)) ? 1 : 0;
  }
  EXPECT_EQ(handed, 3u);
  EXPECT_TRUE(handed_out(span.at(2 * 256)));
  EXPECT_FALSE(handed_out(span.at(3 * 256)));
}

TEST(Region, ASpanThatServesNoClassHoldsNoBlock) {
  std::byte* start = nullptr;
  {
    const CarvedSpan span(class_of(64));
    ASSERT_TRUE(span.carved());
    span.carve_blocks(10, class_of(64));
    start = span.at(0);
    ASSERT_TRUE(handed_out(start));
  }
  ASSERT_TRUE(region_owns(start));
  EXPECT_EQ(span_class_of(start), kClassCount);
  EXPECT_EQ(class_of_block(start), kClassCount);
  EXPECT_FALSE(handed_out(start));
  EXPECT_FALSE(handed_out(start + 64));
}

// What free() would take into a cache, and the bump index hand out again later: reported.
TEST(RegionDeathTest, ABlockStartPastTheCarvedEndIsReportedAsNeverHandedOut) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const unsigned cls = class_of(128);
  const CarvedSpan span(cls);
  ASSERT_TRUE(span.carved());
  span.carve_blocks(2, cls);
  EXPECT_EQ(handed_out_bin_or_report(span.at(128), "free"), cls);
  EXPECT_DEATH(handed_out_bin_or_report(span.at(2 * 128), "free"), "never-used range");
  EXPECT_DEATH(handed_out_bin_or_report(span.at(128 + 16), "free"),
               "16 bytes into the 128-byte block");
}

}  // namespace
