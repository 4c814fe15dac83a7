// protobuf's wire format as proto_wire.hpp writes it, byte for byte, against encodings worked
// out by hand from the format's definition (protobuf.dev, "Encoding").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "proto_wire.hpp"

namespace {

using namespace poolalloc::internal;

// A sink that keeps every byte.
struct Bytes {
  std::string bytes;
  void append(std::string_view more) { bytes.append(more); }
};

std::string varint(std::uint64_t value) {
  Bytes sink;
  append_varint(sink, value);
  return sink.bytes;
}

TEST(ProtoWire, VarintsTakeSevenBitsABytePerGroupLeastSignificantFirst) {
  EXPECT_EQ(varint(0), std::string(1, '\0'));
  EXPECT_EQ(varint(1), "\x01");
  EXPECT_EQ(varint(127), "\x7f");
  EXPECT_EQ(varint(128), "\x80\x01");
  EXPECT_EQ(varint(150), "\x96\x01");  // the example of the format's documentation
  EXPECT_EQ(varint(300), "\xac\x02");
  EXPECT_EQ(varint(16384), "\x80\x80\x01");
  EXPECT_EQ(varint(UINT64_MAX), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
}

TEST(ProtoWire, ANegativeInt64IsItsTwosComplementInTenBytes) {
  EXPECT_EQ(varint(static_cast<std::uint64_t>(std::int64_t{-1})),
            "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
  EXPECT_EQ(varint(static_cast<std::uint64_t>(std::int64_t{-2})),
            "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01");
}

TEST(ProtoWire, VarintSizeCountsTheBytesAppendVarintWrites) {
  for (const std::uint64_t value :
       {std::uint64_t{0}, std::uint64_t{127}, std::uint64_t{128}, std::uint64_t{16383},
        std::uint64_t{16384}, std::uint64_t{1} << 35, std::uint64_t{1} << 63, UINT64_MAX}) {
    EXPECT_EQ(varint_size(value), varint(value).size()) << value;
  }
}

TEST(ProtoWire, AVarintFieldIsItsKeyThenItsValue) {
  Bytes sink;
  append_varint_field(sink, 1, 150);
  EXPECT_EQ(sink.bytes, "\x08\x96\x01");  // key 1 << 3 | 0
  sink.bytes.clear();
  append_varint_field(sink, 14, 3);
  EXPECT_EQ(sink.bytes, "\x70\x03");
  sink.bytes.clear();
  append_varint_field(sink, 16, 1);  // the first field number whose key takes two bytes
  EXPECT_EQ(sink.bytes, "\x80\x01\x01");
}

TEST(ProtoWire, ALengthDelimitedFieldIsItsKeyItsLengthThenItsBytes) {
  Bytes sink;
  append_bytes_field(sink, 2, "testing");
  EXPECT_EQ(sink.bytes, "\x12\x07testing");  // key 2 << 3 | 2
  sink.bytes.clear();
  append_bytes_field(sink, 6, "");
  EXPECT_EQ(sink.bytes, std::string("\x32\x00", 2));
  EXPECT_EQ(length_delimited_size(2, 7), 9u);
  EXPECT_EQ(length_delimited_size(6, 200), 1u + 2u + 200u);
}

TEST(ProtoWire, APackedArrayIsItsLengthPrefixThenTheVarints) {
  Bytes sink;
  append_length_prefix(sink, 4, varint_size(3) + varint_size(270) + varint_size(86942));
  for (const std::uint64_t value : {3, 270, 86942}) append_varint(sink, value);
  EXPECT_EQ(sink.bytes, "\x22\x06\x03\x8e\x02\x9e\xa7\x05");  // the documentation's example
}

TEST(ProtoWire, AWireMessageNestsAsTheBytesItHolds) {
  WireMessage message;
  append_varint_field(message, 1, 150);
  Bytes sink;
  append_bytes_field(sink, 3, message.bytes());
  EXPECT_EQ(sink.bytes, "\x1a\x03\x08\x96\x01");  // the documentation's example
  EXPECT_FALSE(message.overflowed());
}

TEST(ProtoWire, AWireMessageThatWouldOverflowSaysSo) {
  WireMessage message;
  for (std::uint32_t field = 1; field <= 12; ++field)
    append_varint_field(message, field, UINT64_MAX);
  EXPECT_TRUE(message.overflowed());
  EXPECT_LE(message.bytes().size(), 128u);
}

}  // namespace
