// The profile writer's output, decoded by a reader of protobuf's wire format written here from
// profile.proto: the header, the string table, one location per distinct address at the address
// before the return address, the samples as given, and the mappings of /proc/self/maps with the
// program's first. (profile_pprof_test reads the same output with go tool pprof.)
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "profile_format.hpp"
#include "readelf_build_id.hpp"
#include "test_seed.hpp"

namespace {

using namespace poolalloc::internal;

// The fields of one message: number, then a varint's value or a length-delimited field's bytes.
struct Field {
  std::uint32_t number = 0;
  bool delimited = false;
  std::uint64_t value = 0;
  std::string_view bytes;
};

std::uint64_t read_varint(std::string_view& data) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (data.empty()) {
      ADD_FAILURE() << "a varint runs past its message";
      return value;
    }
    const auto byte = static_cast<unsigned char>(data.front());
    data.remove_prefix(1);
    value |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return value;
  }
  ADD_FAILURE() << "a varint of more than 10 bytes";
  return value;
}

std::vector<Field> fields(std::string_view data) {
  std::vector<Field> result;
  while (!data.empty()) {
    const std::uint64_t key = read_varint(data);
    Field field{static_cast<std::uint32_t>(key >> 3), (key & 7) == 2, 0, {}};
    if ((key & 7) == 0) {
      field.value = read_varint(data);
    } else if (field.delimited) {
      const std::uint64_t length = read_varint(data);
      if (length > data.size()) {
        ADD_FAILURE() << "field " << field.number << " runs past its message";
        return result;
      }
      field.bytes = data.substr(0, length);
      data.remove_prefix(length);
    } else {
      ADD_FAILURE() << "wire type " << (key & 7) << " in field " << field.number;
      return result;
    }
    result.push_back(field);
  }
  return result;
}

std::vector<std::uint64_t> packed(std::string_view data) {
  std::vector<std::uint64_t> values;
  while (!data.empty()) values.push_back(read_varint(data));
  return values;
}

struct Mapping {
  std::uint64_t id = 0, start = 0, limit = 0, offset = 0, filename = 0, build_id = 0;
};
struct Location {
  std::uint64_t id = 0, mapping_id = 0, address = 0;
};
struct Sample {
  std::vector<std::uint64_t> locations;
  std::vector<std::int64_t> values;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> labels;  // key, str
};

struct DecodedProfile {
  std::vector<std::string> strings;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sample_types;  // type, unit
  std::pair<std::uint64_t, std::uint64_t> period_type;
  std::int64_t period = 0;
  std::int64_t time_nanos = 0;
  std::uint64_t default_sample_type = 0;
  std::vector<Sample> samples;
  std::vector<Mapping> mappings;
  std::vector<Location> locations;
  std::map<std::uint32_t, int> other_fields;

  [[nodiscard]] std::string text(std::uint64_t index) const {
    return index < strings.size() ? strings[index] : "<no string " + std::to_string(index) + ">";
  }
  [[nodiscard]] const Location* location(std::uint64_t id) const {
    for (const Location& location : locations)
      if (location.id == id) return &location;
    return nullptr;
  }
  [[nodiscard]] const Mapping* mapping(std::uint64_t id) const {
    for (const Mapping& mapping : mappings)
      if (mapping.id == id) return &mapping;
    return nullptr;
  }
};

std::pair<std::uint64_t, std::uint64_t> two_fields(std::string_view message) {
  std::pair<std::uint64_t, std::uint64_t> result;
  for (const Field& field : fields(message)) {
    if (field.number == 1) result.first = field.value;
    if (field.number == 2) result.second = field.value;
  }
  return result;
}

DecodedProfile decode(std::string_view data) {
  DecodedProfile profile;
  for (const Field& field : fields(data)) {
    switch (field.number) {
      case 1:
        profile.sample_types.push_back(two_fields(field.bytes));
        break;
      case 2: {
        Sample sample;
        for (const Field& part : fields(field.bytes)) {
          if (part.number == 1) sample.locations = packed(part.bytes);
          if (part.number == 2)
            for (const std::uint64_t value : packed(part.bytes))
              sample.values.push_back(static_cast<std::int64_t>(value));
          if (part.number == 3) sample.labels.push_back(two_fields(part.bytes));
        }
        profile.samples.push_back(sample);
        break;
      }
      case 3: {
        Mapping mapping;
        std::uint64_t* const slots[] = {&mapping.id,     &mapping.start,    &mapping.limit,
                                        &mapping.offset, &mapping.filename, &mapping.build_id};
        for (const Field& part : fields(field.bytes))
          if (part.number >= 1 && part.number <= 6) *slots[part.number - 1] = part.value;
        profile.mappings.push_back(mapping);
        break;
      }
      case 4: {
        Location location;
        for (const Field& part : fields(field.bytes)) {
          if (part.number == 1) location.id = part.value;
          if (part.number == 2) location.mapping_id = part.value;
          if (part.number == 3) location.address = part.value;
        }
        profile.locations.push_back(location);
        break;
      }
      case 6:
        profile.strings.emplace_back(field.bytes);
        break;
      case 9:
        profile.time_nanos = static_cast<std::int64_t>(field.value);
        ++profile.other_fields[9];
        break;
      case 11:
        profile.period_type = two_fields(field.bytes);
        break;
      case 12:
        profile.period = static_cast<std::int64_t>(field.value);
        break;
      case 14:
        profile.default_sample_type = field.value;
        break;
      default:
        ++profile.other_fields[field.number];
    }
  }
  return profile;
}

struct SampleList {
  std::vector<ProfileSample> samples;
  std::size_t next = 0;
};

bool next_sample(void* context, ProfileSample* out) {
  auto& list = *static_cast<SampleList*>(context);
  if (list.next == list.samples.size()) return false;
  *out = list.samples[list.next++];
  return true;
}

// The bytes write_profile writes, through a file in memory.
std::string written(std::int64_t period, const std::vector<ProfileSample>& samples) {
  const int fd = memfd_create("profile", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  SampleList list{samples};
  EXPECT_TRUE(write_profile(fd, period, next_sample, &list));
  EXPECT_EQ(list.next, samples.size());
  std::string bytes;
  char chunk[65536];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, chunk, sizeof chunk)) > 0;) bytes.append(chunk, std::size_t(n));
  close(fd);
  return bytes;
}

std::vector<std::string> texts(const DecodedProfile& profile,
                               const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pairs) {
  std::vector<std::string> result;
  for (const auto& [first, second] : pairs)
    result.push_back(profile.text(first) + "/" + profile.text(second));
  return result;
}

// CLOCK_REALTIME as the writer reads it (time() reads a coarser clock, which can lag behind).
std::int64_t wall_clock_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

const void* frame(std::uintptr_t address) {
  return reinterpret_cast<const void*>(address);
}

TEST(ProfileFormat, HeaderGivesTheFourHeapValuesInuseSpaceFirstToShowAndThePeriod) {
  const std::int64_t before = wall_clock_ns();
  const DecodedProfile profile = decode(written(524288, {}));
  const std::int64_t after = wall_clock_ns();
  EXPECT_EQ(texts(profile, profile.sample_types),
            (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                      "inuse_objects/count", "inuse_space/bytes"}));
  EXPECT_EQ(profile.text(profile.default_sample_type), "inuse_space");
  EXPECT_EQ(texts(profile, {profile.period_type}), std::vector<std::string>{"space/bytes"});
  EXPECT_EQ(profile.period, 524288);
  EXPECT_EQ(profile.other_fields.at(9), 1) << "time_nanos once";
  EXPECT_GE(profile.time_nanos, before);
  EXPECT_LE(profile.time_nanos, after);
  EXPECT_TRUE(profile.samples.empty());
  EXPECT_TRUE(profile.locations.empty());
}

TEST(ProfileFormat, StringTableStartsWithTheEmptyStringAndHoldsEachStringOnce) {
  const void* frames[] = {frame(0x1001)};
  const DecodedProfile profile = decode(written(0, {{frames, 1, 1, 2, 3, 4, "render"},
                                                    {frames, 1, 1, 2, 3, 4, "render"},
                                                    {frames, 1, 1, 2, 3, 4, "physics"}}));
  ASSERT_FALSE(profile.strings.empty());
  EXPECT_EQ(profile.strings[0], "");
  const std::set<std::string> distinct(profile.strings.begin(), profile.strings.end());
  EXPECT_EQ(distinct.size(), profile.strings.size());
  EXPECT_EQ(distinct.count("render"), 1u);
  EXPECT_EQ(distinct.count("physics"), 1u);
  EXPECT_EQ(distinct.count("tag"), 1u);
}

TEST(ProfileFormat, EachDistinctReturnAddressIsOneLocationAtTheByteBeforeIt) {
  const void* first[] = {frame(0x1001), frame(0x2002), frame(0x3003)};
  const void* second[] = {frame(0x1001), frame(0x2002), frame(0x4004)};
  const DecodedProfile profile =
      decode(written(0, {{first, 3, 1, 1, 1, 1, nullptr}, {second, 3, 1, 1, 1, 1, nullptr}}));
  ASSERT_EQ(profile.locations.size(), 4u);
  std::vector<std::vector<std::uint64_t>> addresses;
  for (const Sample& sample : profile.samples) {
    addresses.emplace_back();
    for (const std::uint64_t id : sample.locations) {
      const Location* location = profile.location(id);
      ASSERT_NE(location, nullptr) << "no location " << id;
      addresses.back().push_back(location->address);
    }
  }
  EXPECT_EQ(addresses, (std::vector<std::vector<std::uint64_t>>{{0x1000, 0x2001, 0x3002},
                                                                {0x1000, 0x2001, 0x4003}}));
  EXPECT_EQ(profile.samples[0].locations[0], profile.samples[1].locations[0]);
  // Addresses in no mapping (the first pages are never mapped) are in none.
  for (const Location& location : profile.locations) EXPECT_EQ(location.mapping_id, 0u);
}

TEST(ProfileFormat, ValuesAndTagsAreWrittenAsGiven) {
  const void* frames[] = {frame(0x1001)};
  const DecodedProfile profile =
      decode(written(0, {{frames, 1, 7, 700000, 5, 500000, "render"},
                         {frames, 1, -1, -4096, 0, INT64_MAX, nullptr},  // e.g. a difference of two
                         {nullptr, 0, 1, 16, 1, 16, ""}}));
  ASSERT_EQ(profile.samples.size(), 3u);
  EXPECT_EQ(profile.samples[0].values, (std::vector<std::int64_t>{7, 700000, 5, 500000}));
  ASSERT_EQ(profile.samples[0].labels.size(), 1u);
  EXPECT_EQ(profile.text(profile.samples[0].labels[0].first), "tag");
  EXPECT_EQ(profile.text(profile.samples[0].labels[0].second), "render");
  EXPECT_EQ(profile.samples[1].values, (std::vector<std::int64_t>{-1, -4096, 0, INT64_MAX}));
  EXPECT_TRUE(profile.samples[1].labels.empty());
  EXPECT_EQ(profile.samples[2].values, (std::vector<std::int64_t>{1, 16, 1, 16}));
  EXPECT_TRUE(profile.samples[2].locations.empty());
}

struct MapsLine {
  std::uint64_t start = 0, limit = 0, offset = 0;
  std::string permissions, path;
};

// /proc/self/maps, read with the standard library: the test's own reading.
std::vector<MapsLine> maps_lines() {
  std::ifstream maps("/proc/self/maps");
  std::vector<MapsLine> lines;
  for (std::string text; std::getline(maps, text);) {
    std::istringstream fields(text);
    MapsLine line;
    std::string range, device, inode;
    fields >> range >> line.permissions >> std::hex >> line.offset >> device >> inode;
    std::getline(fields >> std::ws, line.path);
    line.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    line.limit = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    lines.push_back(line);
  }
  return lines;
}

std::string program_path() {
  char path[PATH_MAX];
  return realpath("/proc/self/exe", path) != nullptr ? path : "";
}

TEST(ProfileFormat, MappingsAreTheExecutableFileMappingsWithTheProgramsFirst) {
  const DecodedProfile profile = decode(written(0, {}));
  std::vector<std::string> expected;
  for (const MapsLine& line : maps_lines()) {
    if (line.permissions[2] != 'x' || line.path.empty()) continue;
    std::ostringstream text;
    text << std::hex << line.start << "-" << line.limit << " " << line.offset << " " << line.path;
    expected.push_back(text.str());
  }
  std::vector<std::string> listed;
  for (std::size_t i = 0; i < profile.mappings.size(); ++i) {
    const Mapping& mapping = profile.mappings[i];
    EXPECT_EQ(mapping.id, i + 1);
    std::ostringstream text;
    text << std::hex << mapping.start << "-" << mapping.limit << " " << mapping.offset << " "
         << profile.text(mapping.filename);
    listed.push_back(text.str());
  }
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(profile.text(profile.mappings[0].filename), program_path());
  EXPECT_EQ(std::multiset<std::string>(listed.begin(), listed.end()),
            std::multiset<std::string>(expected.begin(), expected.end()));
}

// Return addresses in code of the program and of the C library.
__attribute__((noinline)) const void* return_address_here() {
  return __builtin_return_address(0);
}

TEST(ProfileFormat, ALocationInCodeIsInItsFilesMappingWhichCarriesTheFilesBuildId) {
  const void* program_frame = return_address_here();
  // A function of libc, through a pointer: its address in libc, not in the program's PLT.
  const void* volatile library_function = reinterpret_cast<const void*>(&getpid);
  const void* frames[] = {program_frame, static_cast<const char*>(library_function) + 1};
  const DecodedProfile profile = decode(written(0, {{frames, 2, 1, 1, 1, 1, nullptr}}));
  ASSERT_EQ(profile.samples.size(), 1u);
  ASSERT_EQ(profile.samples[0].locations.size(), 2u);
  std::vector<std::string> files;
  for (const std::uint64_t id : profile.samples[0].locations) {
    const Location* location = profile.location(id);
    ASSERT_NE(location, nullptr);
    const Mapping* mapping = profile.mapping(location->mapping_id);
    ASSERT_NE(mapping, nullptr) << std::hex << location->address << " in no mapping";
    EXPECT_LE(mapping->start, location->address);
    EXPECT_LT(location->address, mapping->limit);
    const std::string file = profile.text(mapping->filename);
    files.push_back(file);
    const std::string build_id = profile_test::readelf_build_id(file);
    EXPECT_FALSE(build_id.empty()) << "readelf found no build ID in " << file;
    EXPECT_EQ(profile.text(mapping->build_id), build_id) << file;
  }
  EXPECT_EQ(files[0], program_path());
  EXPECT_NE(files[1].find("libc.so"), std::string::npos) << files[1];
  EXPECT_EQ(profile.location(profile.samples[0].locations[0])->mapping_id, 1u);
}

TEST(ProfileFormat, ManySamplesOfDeepStacksKeepEveryFrame) {
  std::mt19937_64 random(poolalloc_test::test_seed(20240611));
  constexpr int kSamples = 3000;
  constexpr std::uint32_t kDepth = 200;
  // Frames drawn from 5,000 addresses: shared between samples, past the tables' first capacity.
  std::vector<std::vector<const void*>> stacks(kSamples);
  std::vector<ProfileSample> samples;
  std::set<std::uintptr_t> distinct;
  for (auto& stack : stacks) {
    for (std::uint32_t i = 0; i < kDepth; ++i) {
      const std::uintptr_t address = 0x10000 + random() % 5000 * 3;
      stack.push_back(frame(address));
      distinct.insert(address);
    }
    samples.push_back({stack.data(), kDepth, 1, 64, 1, 64, nullptr});
  }
  const DecodedProfile profile = decode(written(0, samples));
  EXPECT_EQ(profile.locations.size(), distinct.size());
  std::map<std::uint64_t, std::uint64_t> address_of;
  for (const Location& location : profile.locations) address_of[location.id] = location.address;
  ASSERT_EQ(profile.samples.size(), stacks.size());
  for (std::size_t s = 0; s < stacks.size(); ++s) {
    ASSERT_EQ(profile.samples[s].locations.size(), kDepth);
    for (std::uint32_t i = 0; i < kDepth; ++i)
      ASSERT_EQ(address_of[profile.samples[s].locations[i]],
                reinterpret_cast<std::uintptr_t>(stacks[s][i]) - 1)
          << "sample " << s << " frame " << i;
  }
}

TEST(ProfileFormat, AFailedWriteIsReportedWithItsReason) {
  SampleList none;
  errno = 0;
  EXPECT_FALSE(write_profile(-1, 0, next_sample, &none));
  EXPECT_EQ(errno, EBADF);
  const int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  errno = 0;
  EXPECT_FALSE(write_profile(full, 0, next_sample, &none));
  EXPECT_EQ(errno, ENOSPC);
  close(full);
}

}  // namespace
