// Span carving: spans of the region handed to size classes, and empty spans taken back, kept
// with their pages up to the retention budget (8 MiB at first, one span more each time a span
// whose pages went back to the OS is carved again, at most 64 MiB) and the others' pages handed
// back to the OS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "os.hpp"
#include "pool_region.hpp"
#include "size_classes.hpp"
#include "span_carving.hpp"

namespace {

using namespace poolalloc::internal;

constexpr std::size_t kMinBudgetSpans = (std::size_t{8} << 20) / kSpanSize;
constexpr std::size_t kMaxBudgetSpans = (std::size_t{64} << 20) / kSpanSize;

bool resident(const Span& span) {
  return os_resident_bytes(span_start(span), kSpanSize) != 0;
}

void touch(const Span& span, unsigned char value) {
  *reinterpret_cast<volatile unsigned char*>(span_start(span)) = value;
}

unsigned char first_byte(const Span& span) {
  return *reinterpret_cast<volatile unsigned char*>(span_start(span));
}

// Each test starts with no span retained, none in the list of spans handed back to the OS and the
// budget at its minimum, and holds carved spans of its own to hand back. Getting there: a trim
// hands the retained spans back to the OS; carving more spans than the region has mapped then
// takes every span handed back (which grows the budget), and a second trim resets the budget.
class SpanCarving : public ::testing::Test {
 protected:
  void SetUp() override {
    release_retained_spans();
    const std::size_t spans = std::max(region_mapped_spans() + 1, kMaxBudgetSpans + 128);
    while (held_.size() < spans) {
      Span* span = carve_span(class_of(64));
      ASSERT_NE(span, nullptr) << "the region cannot grow";
      held_.push_back(span);
    }
    ASSERT_EQ(release_retained_spans(), 0u);
  }
  void TearDown() override {
    for (Span* span : held_) release_span(*span);
    release_retained_spans();
  }

  // `count` of the held spans, which the test then owns.
  std::vector<Span*> take(std::size_t count) {
    std::vector<Span*> spans(held_.end() - static_cast<std::ptrdiff_t>(count), held_.end());
    held_.resize(held_.size() - count);
    return spans;
  }
  void hold(Span* span) { held_.push_back(span); }

 private:
  std::vector<Span*> held_;
};

TEST_F(SpanCarving, ACarvedSpanServesItsClassFromItsFirstByte) {
  const unsigned cls = class_of(48);
  const std::size_t carved = carved_bytes();
  Span* span = carve_span(cls);
  ASSERT_NE(span, nullptr);
  hold(span);
  EXPECT_EQ(carved_bytes(), carved + kSpanSize);
  EXPECT_EQ(span_class_of(span_start(*span)), cls);
  EXPECT_EQ(block_at(*span, 0), span_start(*span));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(span_start(*span)) % kSpanSize, 0u);
  EXPECT_EQ(span->blocks.block_size(), 48u);
  EXPECT_EQ(span->blocks.block_count(), kSpanSize / 48);
  EXPECT_EQ(span->blocks.used_count(), 0u);
  EXPECT_EQ(carved_end_of(*span).load(), 0u);
  EXPECT_EQ(span->next, nullptr);
  EXPECT_EQ(span->prev, nullptr);
}

TEST_F(SpanCarving, ASpansBlocksAreHandedOutInAddressOrderUntilItIsFull) {
  Span* span = carve_span(class_of(48));
  ASSERT_NE(span, nullptr);
  hold(span);
  for (std::uint32_t i = 0; i < kSpanSize / 48; ++i)
    ASSERT_EQ(span->blocks.take(bitmap_of(*span)), i);
  EXPECT_TRUE(span->blocks.full());
}

TEST_F(SpanCarving, EmptySpansAreRetainedUpToTheBudgetAndTheOthersHandedBackToTheOs) {
  const std::vector<Span*> spans = take(kMinBudgetSpans + 3);
  for (Span* span : spans) touch(*span, 1);
  const std::size_t carved = carved_bytes();
  for (Span* span : spans) release_span(*span);
  EXPECT_EQ(carved_bytes(), carved - spans.size() * kSpanSize);
  EXPECT_EQ(retained_bytes(), kMinBudgetSpans * kSpanSize);
  // The first ones released filled the budget; the last three went back to the OS.
  for (std::size_t i = 0; i < spans.size(); ++i)
    EXPECT_EQ(resident(*spans[i]), i < kMinBudgetSpans) << i;
}

// A span's bitmap (its blocks that came back) lies with the metadata, by groups of 32 spans: a
// page of their heads, shared by the 32, then seven pages of their tails, each shared by the
// four or five spans whose tails it holds (pool_region.hpp). A page goes back to the OS with the
// last of the spans that share it; until then it stays.
TEST_F(SpanCarving, ABitmapPageGoesBackToTheOsWithTheLastOfTheSpansSharingIt) {
  const std::vector<Span*> spans = take(kMinBudgetSpans + 64);
  std::vector<bool> ours(region_mapped_spans(), false);
  std::vector<bool> handed_back(region_mapped_spans(), false);
  for (Span* span : spans) {
    // Blocks of 16 bytes, so that the bitmap reaches the end of its tail: the first block and the
    // first and last of the tail come back, which touches every page of the span's bitmap.
    span->blocks = SpanBlocks(16, kSpanSize);
    for (std::uint32_t i = 0; i < span->blocks.block_count(); ++i)
      (void)span->blocks.take(bitmap_of(*span));
    for (const std::uint32_t index :
         {0u, SpanBitmap::kHeadWords * 64, span->blocks.block_count() - 1})
      ASSERT_TRUE(span->blocks.give_back(index, bitmap_of(*span)));
    ours[span_index_of(*span)] = true;
  }
  for (std::size_t i = 0; i < spans.size(); ++i) {
    release_span(*spans[i]);
    handed_back[span_index_of(*spans[i])] = i >= kMinBudgetSpans;
  }
  // Each page whose spans are all the test's: resident exactly while one of them is not handed
  // back.
  constexpr std::size_t kTailBytes = kBitmapTailWords * sizeof(std::uint64_t);
  std::size_t pages_gone = 0;
  std::size_t pages_kept = 0;
  const auto check = [&](const void* page, std::size_t first, std::size_t end) {
    if (!std::all_of(ours.begin() + first, ours.begin() + end, [](bool b) { return b; })) return;
    const bool all_gone = std::all_of(handed_back.begin() + first, handed_back.begin() + end,
                                      [](bool b) { return b; });
    EXPECT_EQ(os_resident_bytes(page, kPageSize) != 0, !all_gone) << "spans " << first << "..";
    (all_gone ? pages_gone : pages_kept) += 1;
  };
  for (std::size_t first = 0; first + kSpansPerBitmapGroup <= ours.size();
       first += kSpansPerBitmapGroup) {
    const auto* group = reinterpret_cast<const std::byte*>(bitmap_of(span_at(first)).head);
    check(group, first, first + kSpansPerBitmapGroup);
    for (std::size_t page = 0; page < kSpansPerBitmapGroup * kTailBytes / kPageSize; ++page)
      check(group + kPageSize * (1 + page), first + page * kPageSize / kTailBytes,
            first + ((page + 1) * kPageSize - 1) / kTailBytes + 1);
  }
  EXPECT_GT(pages_gone, 0u) << "no page's spans all went back: the test proves nothing";
  EXPECT_GT(pages_kept, 0u) << "no page's spans were retained: the test proves nothing";
}

TEST_F(SpanCarving, ARetainedSpanIsCarvedAgainForAnyClassWithItsPages) {
  Span* span = take(1).front();
  touch(*span, 0x5a);
  release_span(*span);
  ASSERT_EQ(retained_bytes(), kSpanSize);
  const unsigned cls = class_of(4096);
  Span* again = carve_span(cls);
  ASSERT_NE(again, nullptr);
  hold(again);
  EXPECT_EQ(again, span);
  EXPECT_EQ(retained_bytes(), 0u);
  EXPECT_EQ(span_class_of(span_start(*again)), cls);
  EXPECT_EQ(again->blocks.block_size(), 4096u);
  EXPECT_EQ(again->blocks.block_count(), kSpanSize / 4096);
  EXPECT_EQ(again->blocks.used_count(), 0u);
  EXPECT_EQ(first_byte(*again), 0x5a) << "a retained span keeps its pages";
}

TEST_F(SpanCarving, ASpanHandedBackToTheOsComesBackZeroedAndGrowsTheBudgetByOne) {
  std::vector<Span*> spans = take(kMinBudgetSpans + 1);
  for (Span* span : spans) touch(*span, 0x5a);
  for (Span* span : spans) release_span(*span);
  Span* const handed_back = spans.back();
  ASSERT_FALSE(resident(*handed_back));
  // The retained ones first, then the one handed back.
  for (Span*& span : spans) {
    span = carve_span(class_of(64));
    ASSERT_NE(span, nullptr);
  }
  EXPECT_EQ(spans.back(), handed_back);
  EXPECT_EQ(first_byte(*handed_back), 0u);
  spans.push_back(take(1).front());
  for (Span* span : spans) release_span(*span);
  EXPECT_EQ(retained_bytes(), (kMinBudgetSpans + 1) * kSpanSize);
}

TEST_F(SpanCarving, TheBudgetGrowsToAtMost64MiB) {
  std::vector<Span*> spans = take(kMaxBudgetSpans + 64);
  for (Span* span : spans) release_span(*span);
  ASSERT_EQ(retained_bytes(), kMinBudgetSpans * kSpanSize);
  // Each of the spans handed back that is carved again grows the budget: 64 + 512 spans.
  for (Span*& span : spans) {
    span = carve_span(class_of(64));
    ASSERT_NE(span, nullptr);
  }
  for (Span* span : spans) release_span(*span);
  EXPECT_EQ(retained_bytes(), kMaxBudgetSpans * kSpanSize);
}

TEST_F(SpanCarving, TrimHandsBackEveryRetainedSpanAndResetsTheBudget) {
  // The budget grows by one, as in the test above, and the spans fill it.
  std::vector<Span*> spans = take(kMinBudgetSpans + 1);
  for (Span* span : spans) release_span(*span);
  for (Span*& span : spans) span = carve_span(class_of(64));
  ASSERT_EQ(std::count(spans.begin(), spans.end(), nullptr), 0);
  for (Span* span : spans) touch(*span, 1);
  for (Span* span : spans) release_span(*span);
  ASSERT_EQ(retained_bytes(), (kMinBudgetSpans + 1) * kSpanSize);

  EXPECT_EQ(release_retained_spans(), (kMinBudgetSpans + 1) * kSpanSize);
  EXPECT_EQ(retained_bytes(), 0u);
  EXPECT_EQ(std::count_if(spans.begin(), spans.end(), [](Span* span) { return resident(*span); }),
            0);
  // Spans that were never handed back leave the budget as trim set it.
  for (Span* span : take(kMinBudgetSpans + 1)) release_span(*span);
  EXPECT_EQ(retained_bytes(), kMinBudgetSpans * kSpanSize);
}

TEST_F(SpanCarving, DecayHandsBackTheRetainedSpansThatNoCarveTookSinceItsLastStep) {
  for (Span* span : take(10)) release_span(*span);
  // Retained since the trim of SetUp, the last step: none had the period to go unused.
  decay_retained_spans();
  EXPECT_EQ(retained_bytes(), 10 * kSpanSize);
  // Three are carved again and two more released: seven went unused for the whole period.
  std::vector<Span*> carved;
  for (int i = 0; i < 3; ++i) carved.push_back(carve_span(class_of(64)));
  ASSERT_EQ(std::count(carved.begin(), carved.end(), nullptr), 0);
  for (Span* span : take(2)) release_span(*span);
  ASSERT_EQ(retained_bytes(), 9 * kSpanSize);
  decay_retained_spans();
  EXPECT_EQ(retained_bytes(), 2 * kSpanSize);
  decay_retained_spans();
  EXPECT_EQ(retained_bytes(), 0u);
  for (Span* span : carved) hold(span);
}

// Of the retained spans, those that go back are those that went unused: the ones released
// first, below those that carves took and released again since (a carve takes the span released
// last). The ones carved again keep their pages.
TEST_F(SpanCarving, DecayHandsBackTheRetainedSpansReleasedFirstAndKeepsThoseCarvedAgain) {
  const std::vector<Span*> released = take(10);
  for (Span* span : released) {
    touch(*span, 1);
    release_span(*span);
  }
  decay_retained_spans();  // the first step: none had the period to go unused
  std::vector<Span*> carved;
  for (int i = 0; i < 3; ++i) carved.push_back(carve_span(class_of(64)));
  EXPECT_EQ(carved, std::vector<Span*>(released.rbegin(), released.rbegin() + 3));
  for (Span* span : carved) release_span(*span);
  decay_retained_spans();
  EXPECT_EQ(retained_bytes(), 3 * kSpanSize);
  for (std::size_t i = 0; i < released.size(); ++i) EXPECT_EQ(resident(*released[i]), i >= 7) << i;
}

// Blocks of 10240 bytes: block 0 ends within page 2, block 1 starts within it. Of each, the
// pages that lie wholly past its first 16 bytes (its link and its free mark) go back to the OS.
TEST_F(SpanCarving, ReleasingAFreeBlocksPagesKeepsThePagesThatHoldItsHeaderAndItsEnds) {
  const unsigned cls = class_of(10240);
  ASSERT_EQ(class_size(cls), 10240u);
  Span* span = carve_span(cls);
  ASSERT_NE(span, nullptr);
  hold(span);
  std::byte* const start = span_start(*span);
  std::memset(start, 0x5a, 2 * 10240);
  ASSERT_EQ(os_resident_bytes(start, kSpanSize), 5 * kPageSize);

  release_block_pages(start, 10240);  // page 1
  EXPECT_EQ(os_resident_bytes(start, kSpanSize), 4 * kPageSize);
  release_block_pages(start + 10240, 10240);  // pages 3 and 4
  EXPECT_EQ(os_resident_bytes(start, kSpanSize), 2 * kPageSize);
  EXPECT_EQ(os_resident_bytes(start, kPageSize), kPageSize);
  EXPECT_EQ(os_resident_bytes(start + 2 * kPageSize, kPageSize), kPageSize);
  const unsigned char header[16] = {0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
                                    0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a};
  EXPECT_EQ(std::memcmp(start, header, sizeof header), 0);
  EXPECT_EQ(std::memcmp(start + 10240, header, sizeof header), 0);
}

}  // namespace
