#include <poolalloc/detail/chunk_map.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

using poolalloc::detail::ChunkMap;

// Chunks as address ranges in one buffer: the map never touches the memory it is given.
struct Ranges {
  std::vector<std::pair<const std::byte*, const std::byte*>> chunks;

  std::uint32_t find(const ChunkMap& map, const std::byte* p) const {
    return map.find(p, [&](std::uint32_t chunk) {
      return p >= chunks[chunk].first && p < chunks[chunk].second;
    });
  }
};

alignas(4096) std::byte memory[64 * 4096];

// 60 chunks side by side, of 100 bytes to 3 granules and over granule boundaries, so that most
// granules hold two or more: every byte is found in its own chunk, and the bytes of none in none.
TEST(ChunkMap, FindsTheChunkOfEveryByteAmongManyChunksThatShareGranules) {
  ChunkMap map;
  map.set_granule(4096);
  Ranges ranges;
  std::size_t offset = 4096;  // the first granule holds no chunk
  for (std::uint32_t i = 0; i < 60; ++i) {
    const std::size_t bytes = 100 + (i * 7919u) % (3 * 4096);
    if (offset + bytes > sizeof memory - 4096) break;
    const std::byte* begin = memory + offset;
    map.reserve(begin, begin + bytes);
    map.insert(begin, begin + bytes, static_cast<std::uint32_t>(ranges.chunks.size()));
    ranges.chunks.emplace_back(begin, begin + bytes);
    offset += bytes + (i % 3 == 0 ? 64 : 0);  // some gaps between chunks
  }
  ASSERT_GT(ranges.chunks.size(), 20u);
  std::uint32_t expected = ChunkMap::kNone;
  for (std::size_t byte = 0; byte < sizeof memory; ++byte) {
    const std::byte* p = memory + byte;
    expected = ChunkMap::kNone;
    for (std::uint32_t chunk = 0; chunk < ranges.chunks.size(); ++chunk) {
      if (p >= ranges.chunks[chunk].first && p < ranges.chunks[chunk].second) expected = chunk;
    }
    ASSERT_EQ(ranges.find(map, p), expected) << "byte " << byte;
  }
}

TEST(ChunkMap, ClearForgetsEveryChunkAndTheChunksEnteredAgainAreFound) {
  ChunkMap map;
  map.set_granule(4096);
  const std::byte* begin = memory + 4096;
  const std::byte* end = begin + 3 * 4096;
  map.reserve(begin, end);
  map.insert(begin, end, 0);
  const Ranges ranges{{{begin, end}}};
  EXPECT_EQ(ranges.find(map, begin + 5000), 0u);
  map.clear();
  EXPECT_EQ(ranges.find(map, begin + 5000), ChunkMap::kNone);
  map.insert(begin, end, 0);
  EXPECT_EQ(ranges.find(map, end - 1), 0u);
  EXPECT_EQ(ranges.find(map, end), ChunkMap::kNone);
}

TEST(ChunkMap, AnEmptyMapFindsNothing) {
  const ChunkMap map;
  EXPECT_EQ(map.find(memory, [](std::uint32_t) { return true; }), ChunkMap::kNone);
}

}  // namespace
