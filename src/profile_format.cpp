#include "profile_format.hpp"

#include <sys/auxv.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string_view>

#include "dedupe_tables.hpp"
#include "elf_build_id.hpp"
#include "os.hpp"
#include "output_buffer.hpp"
#include "process_maps.hpp"
#include "proto_wire.hpp"
#include "scratch_array.hpp"

namespace poolalloc::internal {
namespace {

// The field numbers of profile.proto's messages.
namespace profile_field {
constexpr std::uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kStringTable = 6,
                        kTimeNanos = 9, kPeriodType = 11, kPeriod = 12, kDefaultSampleType = 14;
}
namespace value_type_field {
constexpr std::uint32_t kType = 1, kUnit = 2;
}
namespace sample_field {
constexpr std::uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label_field {
constexpr std::uint32_t kKey = 1, kStr = 2;
}
namespace mapping_field {
constexpr std::uint32_t kId = 1, kMemoryStart = 2, kMemoryLimit = 3, kFileOffset = 4, kFilename = 5,
                        kBuildId = 6;
}
namespace location_field {
constexpr std::uint32_t kId = 1, kMappingId = 2, kAddress = 3;
}

// A line of /proc/self/maps: its fields and a path of up to PATH_MAX bytes.
constexpr std::size_t kMapsLineCapacity = 8192;
constexpr std::size_t kPathCapacity = 4096;
// Build IDs are 20 bytes (SHA-1) as linkers make them, 16 (MD5) or 8 on request; 64 bytes at
// most are written.
constexpr std::size_t kBuildIdDigits = 128;
// The first bytes of a file's image, where linkers put the headers and the build ID's note (after
// .interp, in the first kilobytes).
constexpr std::size_t kImageHeadCapacity = 16384;

struct ExecutableMapping {
  std::uintptr_t start;  // [start, limit)
  std::uintptr_t limit;
  std::uintptr_t offset;
  std::uint64_t filename;  // string table indexes
  std::uint64_t build_id;
  std::uint64_t id;  // given as the mapping is written
};

// Every field of one profile, written in one pass: strings go into the string table as they are
// first needed, locations as their address first appears in a sample (a decoder appends the
// entries of a repeated field in the order they come, wherever they are in the stream).
// Failures are kept in ok_ and end the pass.
class ProfileWriter {
 public:
  explicit ProfileWriter(int fd) : out_(fd) {}

  bool write(std::int64_t period, NextSample next, void* context) {
    write_header(period);
    read_mappings();
    write_mappings();
    ProfileSample sample;
    while (ok_ && out_.ok() && next(context, &sample)) write_sample(sample);
    const bool flushed = out_.flush();
    return ok_ && flushed;
  }

 private:
  // The string's index in the string table, adding it there if it is new.
  std::uint64_t string(std::string_view text) {
    Numbered entry;
    if (!strings_.find_or_add(text, entry)) {
      ok_ = false;
      return 0;
    }
    if (entry.added) append_bytes_field(out_, profile_field::kStringTable, text);
    return entry.number;
  }

  void write_message(std::uint32_t field, const WireMessage& message) {
    if (message.overflowed()) ok_ = false;
    append_bytes_field(out_, field, message.bytes());
  }

  void write_value_type(std::uint32_t field, std::string_view type, std::string_view unit) {
    WireMessage value_type;
    append_varint_field(value_type, value_type_field::kType, string(type));
    append_varint_field(value_type, value_type_field::kUnit, string(unit));
    write_message(field, value_type);
  }

  void write_header(std::int64_t period) {
    string("");  // index 0: pprof requires the string table to start with the empty string
    write_value_type(profile_field::kSampleType, "alloc_objects", "count");
    write_value_type(profile_field::kSampleType, "alloc_space", "bytes");
    write_value_type(profile_field::kSampleType, "inuse_objects", "count");
    write_value_type(profile_field::kSampleType, "inuse_space", "bytes");
    append_varint_field(out_, profile_field::kDefaultSampleType, string("inuse_space"));
    write_value_type(profile_field::kPeriodType, "space", "bytes");
    append_varint_field(out_, profile_field::kPeriod, static_cast<std::uint64_t>(period));
    append_varint_field(out_, profile_field::kTimeNanos,
                        static_cast<std::uint64_t>(os_wall_clock_ns()));
  }

  // The build ID of `path`, if the mapping of its first bytes came just before (image_): a
  // file's mappings are listed together, the one at offset 0 first, at the lowest address. The
  // headers are copied by the kernel before they are read: another thread may unload the
  // library meanwhile (nothing short of the loader's lock, which the writer may not take,
  // keeps it), and a copy of an unmapped page fails where a load would fault.
  std::uint64_t build_id(std::string_view path) {
    char digits[kBuildIdDigits];
    if (image_ == nullptr || path != image_path_) return 0;
    const std::size_t head = os_copy_own_memory(
        image_head_, image_, image_size_ < sizeof image_head_ ? image_size_ : sizeof image_head_);
    return string({digits, read_build_id(image_head_, head, digits, sizeof digits)});
  }

  // The executable mappings of files, in address order, each file's build ID read as soon as
  // its line is: another thread may unmap it.
  void read_mappings() {
    ProcessMapsReader maps(maps_line_, sizeof maps_line_);
    ProcessMapping mapping;
    while (ok_ && maps.next(mapping)) {
      const std::string_view path = mapping.path;
      if (mapping.offset == 0) {
        image_ = nullptr;
        if (mapping.readable && !path.empty() && path.size() < kPathCapacity) {
          image_ = reinterpret_cast<const void*>(mapping.start);
          image_size_ = mapping.end - mapping.start;
          std::memcpy(image_path_, path.data(), path.size());
          image_path_[path.size()] = '\0';
        }
      }
      if (!mapping.executable || path.empty()) continue;  // data, and code made at run time
      const ExecutableMapping executable{mapping.start, mapping.end,    mapping.offset,
                                         string(path),  build_id(path), 0};
      if (!mappings_.push_back(executable)) ok_ = false;
    }
    if (maps.failed()) ok_ = false;
  }

  // The program's mappings first, ids from 1: `go tool pprof PROGRAM PROFILE` puts PROGRAM in
  // the place of the first mapping's file.
  void write_mappings() {
    const std::uintptr_t entry_point = getauxval(AT_ENTRY);
    const ExecutableMapping* program = find_mapping(entry_point);
    std::uint64_t id = 0;
    for (const bool programs : {true, false}) {
      for (std::size_t i = 0; i < mappings_.size(); ++i) {
        ExecutableMapping& mapping = mappings_[i];
        if ((program != nullptr && mapping.filename == program->filename) != programs) continue;
        mapping.id = ++id;
        WireMessage message;
        append_varint_field(message, mapping_field::kId, mapping.id);
        append_varint_field(message, mapping_field::kMemoryStart, mapping.start);
        append_varint_field(message, mapping_field::kMemoryLimit, mapping.limit);
        append_varint_field(message, mapping_field::kFileOffset, mapping.offset);
        append_varint_field(message, mapping_field::kFilename, mapping.filename);
        append_varint_field(message, mapping_field::kBuildId, mapping.build_id);
        write_message(profile_field::kMapping, message);
      }
    }
  }

  // The mapping that holds `address` (a binary search: mappings_ is in address order), or
  // nullptr.
  [[nodiscard]] const ExecutableMapping* find_mapping(std::uintptr_t address) const {
    std::size_t low = 0;
    std::size_t high = mappings_.size();
    while (low < high) {
      const std::size_t middle = low + (high - low) / 2;
      if (mappings_[middle].limit <= address) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    return low < mappings_.size() && mappings_[low].start <= address ? &mappings_[low] : nullptr;
  }

  // The location id of a frame, writing the location the first time its address is seen.
  std::uint64_t location_id(const void* return_address) {
    // A return address is that of the instruction after the call: the call itself is at the
    // address before it, which makes pprof name the call's line, and the calling function where
    // the call is its last instruction (a call to a function that does not return).
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(return_address) - 1;
    Numbered location;
    if (!locations_.find_or_add(address, location)) {
      ok_ = false;
      return 0;
    }
    if (location.added) {
      const ExecutableMapping* mapping = find_mapping(address);
      WireMessage message;
      append_varint_field(message, location_field::kId, location.number);
      append_varint_field(message, location_field::kMappingId,
                          mapping != nullptr ? mapping->id : 0);
      append_varint_field(message, location_field::kAddress, address);
      write_message(profile_field::kLocation, message);
    }
    return location.number;
  }

  // A sample is written straight into the output, its length computed first: the location ids
  // and the values as packed arrays of varints, the tag as a label message.
  void write_sample(const ProfileSample& sample) {
    if (!sample_locations_.resize(sample.depth)) {
      ok_ = false;
      return;
    }
    std::uint64_t locations_bytes = 0;
    for (std::uint32_t i = 0; i < sample.depth; ++i) {
      sample_locations_[i] = location_id(sample.frames[i]);
      locations_bytes += varint_size(sample_locations_[i]);
    }
    const std::uint64_t values[] = {
        static_cast<std::uint64_t>(sample.alloc_objects),
        static_cast<std::uint64_t>(sample.alloc_space),
        static_cast<std::uint64_t>(sample.inuse_objects),
        static_cast<std::uint64_t>(sample.inuse_space),
    };
    std::uint64_t values_bytes = 0;
    for (const std::uint64_t value : values) values_bytes += varint_size(value);
    WireMessage label;
    if (sample.tag != nullptr) {
      append_varint_field(label, label_field::kKey, string("tag"));
      append_varint_field(label, label_field::kStr, string(sample.tag));
    }
    const std::uint64_t sample_bytes =
        length_delimited_size(sample_field::kLocationId, locations_bytes) +
        length_delimited_size(sample_field::kValue, values_bytes) +
        (sample.tag != nullptr ? length_delimited_size(sample_field::kLabel, label.bytes().size())
                               : 0);
    append_length_prefix(out_, profile_field::kSample, sample_bytes);
    append_length_prefix(out_, sample_field::kLocationId, locations_bytes);
    for (std::uint32_t i = 0; i < sample.depth; ++i) append_varint(out_, sample_locations_[i]);
    append_length_prefix(out_, sample_field::kValue, values_bytes);
    for (const std::uint64_t value : values) append_varint(out_, value);
    if (sample.tag != nullptr) write_message(sample_field::kLabel, label);
  }

  OutputBuffer out_;
  StringTable strings_;
  IdTable locations_;
  ScratchArray<ExecutableMapping> mappings_;
  ScratchArray<std::uint64_t> sample_locations_;  // of the sample being written
  // The last mapping of a file's offset 0 seen in /proc/self/maps, readable.
  const void* image_ = nullptr;
  std::size_t image_size_ = 0;
  char image_path_[kPathCapacity] = {};
  char image_head_[kImageHeadCapacity] = {};
  char maps_line_[kMapsLineCapacity] = {};
  bool ok_ = true;
};

}  // namespace

bool write_profile(int fd, std::int64_t period, NextSample next, void* context) {
  // The writer's buffers and tables are mapped, not on the stack: a signal handler may run on a
  // small alternate stack.
  void* memory = os_map(sizeof(ProfileWriter));
  if (memory == nullptr) return false;
  auto* writer = new (memory) ProfileWriter(fd);
  const bool written = writer->write(period, next, context);
  const int error = errno;  // why it failed, through the unmapping
  writer->~ProfileWriter();
  os_unmap(memory, sizeof(ProfileWriter));
  errno = error;
  return written;
}

}  // namespace poolalloc::internal
