#include "dedupe_tables.hpp"

#include <algorithm>

namespace poolalloc::internal {
namespace {

constexpr std::size_t kFirstCapacity = 1024;

// FNV-1a over the bytes, then mix_bits, so that the low bits that pick a slot depend on all of
// them.
std::uint64_t hash_text(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325u;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
  return mix_bits(hash);
}

// Room in `slots` for one more than `count` entries at most half full: doubles the table (moves
// every entry into a fresh one) when it must. False when no memory is to be had.
template <class Slot>
bool make_room(ScratchArray<Slot>& slots, std::uint64_t count) {
  if ((count + 1) * 2 <= slots.size()) return true;
  const std::size_t capacity = std::max(kFirstCapacity, slots.size() * 2);
  ScratchArray<Slot> fresh;
  if (!fresh.resize(capacity)) return false;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i].used()) continue;
    std::size_t at = slots[i].hash() & (capacity - 1);
    while (fresh[at].used()) at = (at + 1) & (capacity - 1);
    fresh[at] = slots[i];
  }
  slots.swap(fresh);
  return true;
}

}  // namespace

bool StringTable::holds(const Slot& slot, std::uint64_t hash, std::string_view text) const {
  return slot.hash() == hash && std::string_view(text_.data() + slot.offset, slot.length) == text;
}

bool StringTable::find_or_add(std::string_view text, Numbered& result) {
  if (!make_room(slots_, count_)) return false;
  const std::uint64_t hash = hash_text(text);
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = hash & mask;
  for (; slots_[at].used(); at = (at + 1) & mask) {
    if (holds(slots_[at], hash, text)) {
      result = {slots_[at].number_plus_one - 1, false};
      return true;
    }
  }
  // Offsets and lengths are 32 bits: the table holds less than 4 GiB of text.
  const std::size_t offset = text_.size();
  if (text.size() > UINT32_MAX - offset || !text_.append(text.data(), text.size())) return false;
  slots_[at] = {hash, count_ + 1, static_cast<std::uint32_t>(offset),
                static_cast<std::uint32_t>(text.size())};
  result = {count_++, true};
  return true;
}

bool IdTable::find_or_add(std::uint64_t key, Numbered& result) {
  if (!make_room(slots_, count_)) return false;
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = mix_bits(key) & mask;
  for (; slots_[at].used(); at = (at + 1) & mask) {
    if (slots_[at].key == key) {
      result = {slots_[at].number, false};
      return true;
    }
  }
  slots_[at] = {key, ++count_};
  result = {count_, true};
  return true;
}

}  // namespace poolalloc::internal
