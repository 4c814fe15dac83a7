// protobuf's wire format, the part that a profile needs: varints, and fields of varint and of
// length-delimited type, appended to any sink that has append(std::string_view) (OutputBuffer,
// WireMessage). A field is a key, field_number << 3 | wire type, then its payload; a
// length-delimited payload (a string, a nested message, a packed array of varints) is preceded
// by its length in bytes, so a nested message is either built whole first (WireMessage) or its
// length computed before it is written (varint_size). Nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace poolalloc::internal {

enum class WireType : std::uint8_t { kVarint = 0, kLengthDelimited = 2 };

inline constexpr std::size_t kMaxVarintBytes = 10;

// Bytes of `value` as a varint: 7 bits a byte, 1 for 0 to 127, 10 for 2^63 and more (every
// negative int64: protobuf writes an int64 as its 64-bit two's complement).
constexpr std::size_t varint_size(std::uint64_t value) {
  std::size_t bytes = 1;
  for (; value >= 0x80; value >>= 7) ++bytes;
  return bytes;
}

// Bytes of a length-delimited field whose payload is `length` bytes: key, length, payload.
constexpr std::uint64_t length_delimited_size(std::uint32_t field, std::uint64_t length) {
  return varint_size(std::uint64_t{field} << 3 |
                     static_cast<std::uint8_t>(WireType::kLengthDelimited)) +
         varint_size(length) + length;
}

// Least significant group first, the high bit of each byte set when another byte follows.
template <class Sink>
void append_varint(Sink& sink, std::uint64_t value) {
  char bytes[kMaxVarintBytes];
  std::size_t length = 0;
  for (; value >= 0x80; value >>= 7) bytes[length++] = static_cast<char>(value | 0x80);
  bytes[length++] = static_cast<char>(value);
  sink.append(std::string_view(bytes, length));
}

template <class Sink>
void append_key(Sink& sink, std::uint32_t field, WireType type) {
  append_varint(sink, std::uint64_t{field} << 3 | static_cast<std::uint8_t>(type));
}

// A field of type int64, uint64 or bool (an int64 as its two's complement).
template <class Sink>
void append_varint_field(Sink& sink, std::uint32_t field, std::uint64_t value) {
  append_key(sink, field, WireType::kVarint);
  append_varint(sink, value);
}

// The key and length of a length-delimited field whose `length` bytes the caller appends next.
template <class Sink>
void append_length_prefix(Sink& sink, std::uint32_t field, std::uint64_t length) {
  append_key(sink, field, WireType::kLengthDelimited);
  append_varint(sink, length);
}

// A string, bytes, or a nested message already encoded.
template <class Sink>
void append_bytes_field(Sink& sink, std::uint32_t field, std::string_view bytes) {
  append_length_prefix(sink, field, bytes.size());
  sink.append(bytes);
}

// A small message built whole in a fixed buffer, to be written behind its length. Bytes beyond
// the capacity are dropped and overflowed() says so.
class WireMessage {
 public:
  void append(std::string_view bytes) {
    if (bytes.size() > kCapacity - length_) {
      overflowed_ = true;
      return;
    }
    std::memcpy(bytes_ + length_, bytes.data(), bytes.size());
    length_ += bytes.size();
  }
  [[nodiscard]] std::string_view bytes() const { return {bytes_, length_}; }
  [[nodiscard]] bool overflowed() const { return overflowed_; }

 private:
  // A message of 11 varint fields of 64 bits at most (11 bytes each with its key) fits.
  static constexpr std::size_t kCapacity = 128;
  char bytes_[kCapacity];
  std::size_t length_ = 0;
  bool overflowed_ = false;
};

}  // namespace poolalloc::internal
