// The GNU build ID read from an ELF image in memory: the program's own, as readelf prints it from
// the file, and the notes of images built here byte by byte, with the bounds the reader must keep
// to.
#include <elf.h>
#include <limits.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "elf_build_id.hpp"
#include "process_maps.hpp"
#include "readelf_build_id.hpp"

namespace {

using namespace poolalloc::internal;
using profile_test::readelf_build_id;

std::string build_id(const void* image, std::size_t size, std::size_t capacity = 128) {
  std::vector<char> hex(capacity);
  return {hex.data(), read_build_id(image, size, hex.data(), hex.size())};
}

TEST(ElfBuildId, ReadsTheProgramsOwnAsReadelfPrintsItFromTheFile) {
  char program[PATH_MAX];
  ASSERT_NE(realpath("/proc/self/exe", program), nullptr);
  const std::string expected = readelf_build_id(program);
  ASSERT_FALSE(expected.empty()) << "readelf -n " << program << " found no build ID";
  char buffer[4096];
  ProcessMapsReader maps(buffer, sizeof buffer);
  ProcessMapping mapping;
  bool found = false;
  while (!found && maps.next(mapping)) found = mapping.path == program && mapping.offset == 0;
  ASSERT_TRUE(found) << "no mapping of offset 0 of " << program;
  EXPECT_EQ(build_id(reinterpret_cast<const void*>(mapping.start), mapping.end - mapping.start),
            expected);
}

// An ELF image with one PT_NOTE segment of `alignment` holding `notes`, at offset 0x100.
std::vector<unsigned char> image_with_notes(const std::vector<unsigned char>& notes,
                                            std::uint64_t alignment) {
  std::vector<unsigned char> image(0x100 + notes.size());
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_phoff = sizeof header;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 1;
  Elf64_Phdr segment{};
  segment.p_type = PT_NOTE;
  segment.p_offset = 0x100;
  segment.p_filesz = notes.size();
  segment.p_align = alignment;
  std::memcpy(image.data(), &header, sizeof header);
  std::memcpy(image.data() + sizeof header, &segment, sizeof segment);
  std::memcpy(image.data() + 0x100, notes.data(), notes.size());
  return image;
}

// One note: its header, its name and its descriptor, each padded to `alignment`.
void add_note(std::vector<unsigned char>& notes, std::uint32_t type, const std::string& name,
              const std::vector<unsigned char>& descriptor, std::size_t alignment) {
  const Elf64_Nhdr header{static_cast<Elf64_Word>(name.size() + 1),
                          static_cast<Elf64_Word>(descriptor.size()), type};
  const auto* bytes = reinterpret_cast<const unsigned char*>(&header);
  notes.insert(notes.end(), bytes, bytes + sizeof header);
  notes.insert(notes.end(), name.begin(), name.end());
  notes.push_back(0);
  notes.resize((notes.size() + alignment - 1) / alignment * alignment);
  notes.insert(notes.end(), descriptor.begin(), descriptor.end());
  notes.resize((notes.size() + alignment - 1) / alignment * alignment);
}

const std::vector<unsigned char> kId = {0x0f, 0xde, 0xad, 0xbe, 0xef};

TEST(ElfBuildId, IsTheGnuBuildIdNoteInLowercaseHexAfterTheNotesBeforeIt) {
  for (const std::size_t alignment : {4, 8}) {
    std::vector<unsigned char> notes;
    add_note(notes, NT_GNU_ABI_TAG, "GNU", {0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0},
             alignment);
    add_note(notes, NT_GNU_BUILD_ID, "Go", {1, 2, 3, 4}, alignment);  // another vendor's type 3
    add_note(notes, NT_GNU_BUILD_ID, "GNU", kId, alignment);
    const std::vector<unsigned char> image = image_with_notes(notes, alignment);
    EXPECT_EQ(build_id(image.data(), image.size()), "0fdeadbeef") << "alignment " << alignment;
  }
}

TEST(ElfBuildId, IsNoneWhenTheNoteEndsBeyondTheBytesGiven) {
  std::vector<unsigned char> notes;
  add_note(notes, NT_GNU_BUILD_ID, "GNU", kId, 4);
  const std::vector<unsigned char> image = image_with_notes(notes, 4);
  EXPECT_EQ(build_id(image.data(), image.size() - 1), "");
  EXPECT_EQ(build_id(image.data(), 0x100), "");
  EXPECT_EQ(build_id(image.data(), sizeof(Elf64_Ehdr)), "");  // the program header is beyond
}

TEST(ElfBuildId, IsNoneWhenItDoesNotFitTheCapacity) {
  std::vector<unsigned char> notes;
  add_note(notes, NT_GNU_BUILD_ID, "GNU", kId, 4);
  const std::vector<unsigned char> image = image_with_notes(notes, 4);
  EXPECT_EQ(build_id(image.data(), image.size(), 10), "0fdeadbeef");
  EXPECT_EQ(build_id(image.data(), image.size(), 9), "");
}

TEST(ElfBuildId, IsNoneForBytesThatAreNoElfImage) {
  std::vector<unsigned char> notes;
  add_note(notes, NT_GNU_BUILD_ID, "GNU", kId, 4);
  std::vector<unsigned char> image = image_with_notes(notes, 4);
  image[1] = 'F';  // "\x7f" "FLF"
  EXPECT_EQ(build_id(image.data(), image.size()), "");
}

TEST(ElfBuildId, ANoteWhoseSizeOverrunsItsSegmentEndsTheSearch) {
  std::vector<unsigned char> notes;
  add_note(notes, NT_GNU_BUILD_ID, "GNU", kId, 4);
  const Elf64_Word huge = 0xfffffff0;
  std::memcpy(notes.data() + offsetof(Elf64_Nhdr, n_descsz), &huge, sizeof huge);
  const std::vector<unsigned char> image = image_with_notes(notes, 4);
  EXPECT_EQ(build_id(image.data(), image.size()), "");
}

}  // namespace
