#include "profile_format.hpp"

#include <sys/auxv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string_view>

#include "dedupe_tables.hpp"
#include "elf_build_id.hpp"
#include "elf_symbols.hpp"
#include "os.hpp"
#include "output_buffer.hpp"
#include "process_maps.hpp"
#include "proto_wire.hpp"
#include "scratch_array.hpp"

namespace poolalloc::internal {
namespace {

// The field numbers of profile.proto's messages.
namespace profile_field {
constexpr std::uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                        kStringTable = 6, kTimeNanos = 9, kPeriodType = 11, kPeriod = 12,
                        kDefaultSampleType = 14;
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
                        kBuildId = 6, kHasFunctions = 7;
}
namespace location_field {
constexpr std::uint32_t kId = 1, kMappingId = 2, kAddress = 3, kLine = 4;
}
namespace line_field {
constexpr std::uint32_t kFunctionId = 1;
}
namespace function_field {
constexpr std::uint32_t kId = 1, kName = 2, kSystemName = 3;
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
  std::size_t path;  // where the file's path starts in paths_
  // The build ID as the file's image in memory has it, build_id_length digits: the file that the
  // path names now must have the same to name the mapping's functions.
  char build_id_digits[kBuildIdDigits];
  std::size_t build_id_length;
  std::uint64_t id;    // given as the mapping is written
  bool has_functions;  // the file's symbols named a location in it
};

// An address of a frame of the samples, and the function that holds it.
struct Location {
  std::uintptr_t address;
  std::uint64_t function_id;  // 0: not named
};

// Every field of one profile, written in one pass: strings go into the string table as they are
// first needed, the samples as they come, then the functions, the mappings and the locations (a
// decoder appends the entries of a repeated field in the order they come, wherever they are in
// the stream). Failures are kept in ok_ and end the pass.
//
// The profile names the functions itself, from the symbol tables of the files mapped, and marks
// the mappings so (has_functions): pprof then leaves them as they are and demangles the names.
// What `go tool pprof` would find on its own, from DWARF alone, misses most of a C++ program:
// every function of a namespace or a class (it reads no DW_AT_specification), every function of
// a file whose line table does not list its code in address order (any file with an inline
// virtual function or a template instance, emitted first and placed last), and every library
// without debug information.
class ProfileWriter {
 public:
  explicit ProfileWriter(int fd) : out_(fd) {}

  bool write(std::int64_t period, NextSample next, void* context) {
    write_header(period);
    read_mappings();
    ProfileSample sample;
    while (ok_ && out_.ok() && next(context, &sample)) write_sample(sample);
    if (ok_) name_functions();
    write_mappings();
    write_locations();
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

  // The build ID of `path` into `digits`, if the mapping of its first bytes came just before
  // (image_): a file's mappings are listed together, the one at offset 0 first, at the lowest
  // address. How many digits it has, 0 for none. The headers are copied by the kernel before
  // they are read: another thread may unload the library meanwhile (nothing short of the
  // loader's lock, which the writer may not take, keeps it), and a copy of an unmapped page
  // fails where a load would fault.
  std::size_t build_id(std::string_view path, char (&digits)[kBuildIdDigits]) {
    if (image_ == nullptr || path != image_path_) return 0;
    const std::size_t head = os_copy_own_memory(
        image_head_, image_, image_size_ < sizeof image_head_ ? image_size_ : sizeof image_head_);
    return read_build_id(image_head_, head, digits, sizeof digits);
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
      ExecutableMapping executable{};
      executable.start = mapping.start;
      executable.limit = mapping.end;
      executable.offset = mapping.offset;
      executable.filename = string(path);
      executable.build_id_length = build_id(path, executable.build_id_digits);
      executable.build_id = string({executable.build_id_digits, executable.build_id_length});
      executable.path = paths_.size();
      if (!paths_.append(path.data(), path.size()) || !paths_.push_back('\0') ||
          !mappings_.push_back(executable))
        ok_ = false;
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
        if (mapping.has_functions) append_varint_field(message, mapping_field::kHasFunctions, 1);
        write_message(profile_field::kMapping, message);
      }
    }
  }

  // The mapping that holds `address` (a binary search: mappings_ is in address order), or
  // nullptr.
  ExecutableMapping* find_mapping(std::uintptr_t address) {
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

  // The location id of a frame, numbered from 1 as its address is first seen.
  std::uint64_t location_id(const void* return_address) {
    // A return address is that of the instruction after the call: the call itself is at the
    // address before it, which makes pprof name the call's line, and the calling function where
    // the call is its last instruction (a call to a function that does not return).
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(return_address) - 1;
    Numbered location;
    if (!location_ids_.find_or_add(address, location)) {
      ok_ = false;
      return 0;
    }
    if (location.added && !locations_.push_back({address, 0})) ok_ = false;
    return location.number;
  }

  // Names the locations' functions, a mapped file at a time: its locations in address order,
  // then one pass over the file's symbols that finds the locations of each by a binary search.
  void name_functions() {
    const std::size_t count = locations_.size();
    if (!order_.resize(count)) {
      ok_ = false;
      return;
    }
    for (std::size_t i = 0; i < count; ++i) order_[i] = i;
    std::sort(order_.data(), order_.data() + count, [this](std::size_t a, std::size_t b) {
      return locations_[a].address < locations_[b].address;
    });
    for (std::size_t first = 0; ok_ && first < count;) {
      ExecutableMapping* mapping = find_mapping(locations_[order_[first]].address);
      std::size_t last = first + 1;
      if (mapping != nullptr) {
        while (last < count && locations_[order_[last]].address < mapping->limit) ++last;
        name_in_file(*mapping, order_.data() + first, order_.data() + last);
      }
      first = last;
    }
  }

  // Names the locations [begin, end) of `mapping`, from the symbols of the file at its path if
  // that file is still the one the process mapped (a file replaced since would give wrong names).
  void name_in_file(ExecutableMapping& mapping, std::size_t* begin, std::size_t* end) {
    const ElfFile file = map_elf_file(&paths_[mapping.path]);
    char digits[kBuildIdDigits];
    const std::size_t length = read_build_id(file.bytes, file.size, digits, sizeof digits);
    std::uint64_t delta = 0;
    if (file.bytes != nullptr &&
        std::string_view(digits, length) ==
            std::string_view(mapping.build_id_digits, mapping.build_id_length) &&
        code_address_delta(file, mapping.offset, delta)) {
      // A location's address in the file's own addresses, those of its symbols.
      const auto in_file = [&](std::size_t location) {
        return locations_[location].address - mapping.start + mapping.offset + delta;
      };
      FunctionSymbols symbols(file);
      FunctionSymbol symbol;
      while (ok_ && symbols.next(symbol)) {
        std::size_t* at = std::partition_point(
            begin, end, [&](std::size_t location) { return in_file(location) < symbol.start; });
        for (; at != end && in_file(*at) - symbol.start < symbol.size; ++at) {
          Location& location = locations_[*at];
          if (location.function_id != 0) continue;  // named by a symbol before, an alias
          location.function_id = function_id(symbol.name);
          mapping.has_functions = true;
        }
      }
    }
    unmap_elf_file(file);
  }

  // The id of the function named `name`, writing the function the first time the name is seen.
  // Its name is the symbol's, mangled: pprof demangles it (nothing here may, as that allocates).
  std::uint64_t function_id(const char* name) {
    const std::uint64_t name_index = string(name);
    Numbered function;
    if (!functions_.find_or_add(name_index, function)) {
      ok_ = false;
      return 0;
    }
    if (function.added) {
      WireMessage message;
      append_varint_field(message, function_field::kId, function.number);
      append_varint_field(message, function_field::kName, name_index);
      append_varint_field(message, function_field::kSystemName, name_index);
      write_message(profile_field::kFunction, message);
    }
    return function.number;
  }

  void write_locations() {
    for (std::size_t i = 0; ok_ && i < locations_.size(); ++i) {
      const Location& location = locations_[i];
      const ExecutableMapping* mapping = find_mapping(location.address);
      WireMessage message;
      append_varint_field(message, location_field::kId, i + 1);
      append_varint_field(message, location_field::kMappingId,
                          mapping != nullptr ? mapping->id : 0);
      append_varint_field(message, location_field::kAddress, location.address);
      if (location.function_id != 0) {
        WireMessage line;
        append_varint_field(line, line_field::kFunctionId, location.function_id);
        append_bytes_field(message, location_field::kLine, line.bytes());
      }
      write_message(profile_field::kLocation, message);
    }
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
  IdTable location_ids_;              // by address
  ScratchArray<Location> locations_;  // by id - 1
  ScratchArray<std::size_t> order_;   // indexes of locations_ in address order
  IdTable functions_;                 // by the string index of the name
  ScratchArray<ExecutableMapping> mappings_;
  ScratchArray<char> paths_;                      // the mappings' paths, each ended by a NUL
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
