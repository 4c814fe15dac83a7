#include "frame_rules.hpp"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace poolalloc::internal {
namespace {

// DWARF's x86-64 register numbers, and the pointer encodings of .eh_frame (DW_EH_PE_*).
constexpr std::uint64_t kRbp = 6;
constexpr std::uint64_t kRsp = 7;
constexpr std::uint64_t kReturnAddress = 16;
constexpr std::uint8_t kOmit = 0xff;
constexpr std::uint8_t kIndirect = 0x80;
constexpr std::uint8_t kPcRelative = 0x10;
constexpr std::uint8_t kDataRelative = 0x30;
constexpr std::uint8_t kDataRelativeSigned4 = 0x3b;  // the search table's usual encoding

// Reads the tables in place, as the loader mapped them: a loaded object's own tables are
// trusted as far as their lengths, which bound every read.
struct Reader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool bad = false;

  template <class T>
  T fixed() {
    T value{};
    if (end - p < static_cast<std::ptrdiff_t>(sizeof(T))) {
      bad = true;
      return value;
    }
    std::memcpy(&value, p, sizeof(T));
    p += sizeof(T);
    return value;
  }
  std::uint64_t uleb() {
    std::uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (p == end || shift > 63) {
        bad = true;
        return value;
      }
      const std::uint8_t byte = *p++;
      value |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
  }
  std::int64_t sleb() {
    std::uint64_t value = 0;
    unsigned shift = 0;
    std::uint8_t byte = 0;
    do {
      if (p == end || shift > 63) {
        bad = true;
        return 0;
      }
      byte = *p++;
      value |= std::uint64_t{byte & 0x7fu} << shift;
      shift += 7;
    } while ((byte & 0x80) != 0);
    if (shift < 64 && (byte & 0x40) != 0) value |= ~std::uint64_t{0} << shift;
    return static_cast<std::int64_t>(value);
  }
  // A pointer in `encoding`; `data_base` for data-relative ones (the search table's start).
  // Encodings that no x86-64 compiler writes for these fields (text- and function-relative,
  // aligned) set `bad`.
  std::uintptr_t pointer(std::uint8_t encoding, std::uintptr_t data_base = 0) {
    const auto here = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t value = 0;
    switch (encoding & 0x0f) {
      case 0x00:
        value = fixed<std::uint64_t>();
        break;
      case 0x01:
        value = uleb();
        break;
      case 0x02:
        value = fixed<std::uint16_t>();
        break;
      case 0x03:
        value = fixed<std::uint32_t>();
        break;
      case 0x04:
        value = fixed<std::uint64_t>();
        break;
      case 0x09:
        value = static_cast<std::uintptr_t>(sleb());
        break;
      case 0x0a:
        value = static_cast<std::uintptr_t>(std::int64_t{fixed<std::int16_t>()});
        break;
      case 0x0b:
        value = static_cast<std::uintptr_t>(std::int64_t{fixed<std::int32_t>()});
        break;
      case 0x0c:
        value = static_cast<std::uintptr_t>(fixed<std::int64_t>());
        break;
      default:
        bad = true;
        return 0;
    }
    switch (encoding & 0x70) {
      case 0x00:
        break;
      case kPcRelative:
        value += here;
        break;
      case kDataRelative:
        value += data_base;
        break;
      default:
        bad = true;
        return 0;
    }
    if ((encoding & kIndirect) != 0 && !bad)
      value = *reinterpret_cast<const std::uintptr_t*>(value);
    return value;
  }
};

// A register's rule, of the three registers the walk follows.
struct RegisterRule {
  enum Kind : std::uint8_t { kSame, kUndefined, kAtOffset, kOther };
  Kind kind = kSame;
  std::int64_t offset = 0;  // from the CFA, for kAtOffset
};

struct Row {
  std::uint64_t cfa_register = kRsp;
  std::int64_t cfa_offset = 0;
  RegisterRule rbp;
  RegisterRule ra;
  bool cfa_other = false;  // an expression, or a register other than rsp and rbp
  bool rsp_ruled = false;  // a rule for rsp itself: not an ordinary frame
};

struct Cie {
  std::uint64_t code_align = 1;
  std::int64_t data_align = 1;
  std::uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const std::uint8_t* instructions = nullptr;
  const std::uint8_t* end = nullptr;
};

// The length field of a CIE or FDE: where the entry's body starts and ends; false for a
// terminator or a malformed length.
bool entry_bounds(const std::uint8_t* entry, const std::uint8_t*& body, const std::uint8_t*& end) {
  std::uint32_t length32;
  std::memcpy(&length32, entry, 4);
  if (length32 == 0) return false;
  if (length32 == 0xffffffff) {
    std::uint64_t length64;
    std::memcpy(&length64, entry + 4, 8);
    body = entry + 12;
    end = body + length64;
    return true;
  }
  body = entry + 4;
  end = body + length32;
  return true;
}

bool parse_cie(const std::uint8_t* entry, Cie& cie) {
  const std::uint8_t* body;
  if (!entry_bounds(entry, body, cie.end)) return false;
  Reader r{body, cie.end};
  if (r.fixed<std::uint32_t>() != 0) return false;  // not a CIE
  const auto version = r.fixed<std::uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* augmentation = reinterpret_cast<const char*>(r.p);
  const std::size_t length = strnlen(augmentation, static_cast<std::size_t>(r.end - r.p));
  r.p += length + 1;
  if (r.p > r.end) return false;
  cie.code_align = r.uleb();
  cie.data_align = r.sleb();
  const std::uint64_t ra_register = version == 1 ? r.fixed<std::uint8_t>() : r.uleb();
  if (ra_register != kReturnAddress) return false;
  if (augmentation[0] == 'z') {
    cie.has_augmentation_data = true;
    const std::uint64_t data_length = r.uleb();
    const std::uint8_t* data_end = r.p + data_length;
    bool known = true;
    for (const char* a = augmentation + 1; *a != '\0' && known && !r.bad; ++a) {
      if (*a == 'R') {
        cie.fde_encoding = r.fixed<std::uint8_t>();
      } else if (*a == 'P') {  // the personality routine: skipped, not read
        r.pointer(static_cast<std::uint8_t>(r.fixed<std::uint8_t>() & ~kIndirect));
      } else if (*a == 'L') {
        r.fixed<std::uint8_t>();
      } else if (*a == 'S') {
        cie.signal_frame = true;
      } else {
        known = false;  // the rest of the data is skipped by its length
      }
    }
    if (data_end > r.end) return false;
    r.p = data_end;
  } else if (augmentation[0] != '\0') {
    return false;  // "eh" and other pre-'z' augmentations
  }
  if (r.bad || r.p > r.end) return false;
  cie.instructions = r.p;
  return true;
}

// The rule that `register_number` gets, when it is one of those the walk follows.
void set_rule(Row& row, std::uint64_t register_number, RegisterRule rule) {
  if (register_number == kRbp) row.rbp = rule;
  if (register_number == kReturnAddress) row.ra = rule;
  if (register_number == kRsp) row.rsp_ruled = true;
}

void restore_rule(Row& row, const Row& initial, std::uint64_t register_number) {
  if (register_number == kRbp) row.rbp = initial.rbp;
  if (register_number == kReturnAddress) row.ra = initial.ra;
  if (register_number == kRsp) row.rsp_ruled = initial.rsp_ruled;
}

constexpr int kRememberedRows = 8;

// Runs the call-frame instructions of `r` from location `loc`, applying those before the first
// location past `pc` to `row`; false on an instruction unknown or malformed. `initial` is the
// row that the CIE's instructions set up (DW_CFA_restore's rules).
bool run_program(Reader r, const Cie& cie, std::uintptr_t loc, std::uintptr_t pc,
                 const Row& initial, Row& row) {
  Row remembered[kRememberedRows];
  int depth = 0;
  const auto advance = [&](std::uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= pc;
  };
  const auto at_offset = [&](std::int64_t factored) {
    return RegisterRule{RegisterRule::kAtOffset, factored * cie.data_align};
  };
  constexpr RegisterRule kOtherRule{RegisterRule::kOther, 0};
  while (r.p < r.end) {
    const auto op = r.fixed<std::uint8_t>();
    const std::uint8_t operand = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:  // DW_CFA_advance_loc
        if (!advance(operand)) return true;
        continue;
      case 0x80:  // DW_CFA_offset
        set_rule(row, operand, at_offset(static_cast<std::int64_t>(r.uleb())));
        continue;
      case 0xc0:  // DW_CFA_restore
        restore_rule(row, initial, operand);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;    // DW_CFA_nop
      case 0x01:  // DW_CFA_set_loc
        loc = r.pointer(cie.fde_encoding);
        if (loc > pc) return true;
        break;
      case 0x02:
        if (!advance(r.fixed<std::uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<std::uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<std::uint32_t>())) return true;
        break;
      case 0x05: {  // DW_CFA_offset_extended
        const std::uint64_t reg = r.uleb();
        set_rule(row, reg, at_offset(static_cast<std::int64_t>(r.uleb())));
        break;
      }
      case 0x06:
        restore_rule(row, initial, r.uleb());
        break;
      case 0x07:
        set_rule(row, r.uleb(), RegisterRule{RegisterRule::kUndefined, 0});
        break;
      case 0x08:
        set_rule(row, r.uleb(), RegisterRule{RegisterRule::kSame, 0});
        break;
      case 0x09: {  // DW_CFA_register
        const std::uint64_t reg = r.uleb();
        r.uleb();
        set_rule(row, reg, kOtherRule);
        break;
      }
      case 0x0a:  // DW_CFA_remember_state: every rule, the CFA's too, as GCC's and libunwind's
        if (depth == kRememberedRows) return false;
        remembered[depth++] = row;
        break;
      case 0x0b:
        if (depth == 0) return false;
        row = remembered[--depth];
        break;
      case 0x0c:  // DW_CFA_def_cfa
        row.cfa_register = r.uleb();
        row.cfa_offset = static_cast<std::int64_t>(r.uleb());
        row.cfa_other = false;
        break;
      case 0x0d:
        row.cfa_register = r.uleb();
        break;
      case 0x0e:
        row.cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0f:  // DW_CFA_def_cfa_expression
        r.p += r.uleb();
        row.cfa_other = true;
        break;
      case 0x10:    // DW_CFA_expression
      case 0x16: {  // DW_CFA_val_expression
        const std::uint64_t reg = r.uleb();
        r.p += r.uleb();
        set_rule(row, reg, kOtherRule);
        break;
      }
      case 0x11: {  // DW_CFA_offset_extended_sf
        const std::uint64_t reg = r.uleb();
        set_rule(row, reg, at_offset(r.sleb()));
        break;
      }
      case 0x12:  // DW_CFA_def_cfa_sf
        row.cfa_register = r.uleb();
        row.cfa_offset = r.sleb() * cie.data_align;
        row.cfa_other = false;
        break;
      case 0x13:
        row.cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14: {  // DW_CFA_val_offset
        const std::uint64_t reg = r.uleb();
        r.uleb();
        set_rule(row, reg, kOtherRule);
        break;
      }
      case 0x15: {  // DW_CFA_val_offset_sf
        const std::uint64_t reg = r.uleb();
        r.sleb();
        set_rule(row, reg, kOtherRule);
        break;
      }
      case 0x2e:
        r.uleb();
        break;      // DW_CFA_GNU_args_size
      case 0x2f: {  // DW_CFA_GNU_negative_offset_extended
        const std::uint64_t reg = r.uleb();
        set_rule(row, reg, at_offset(-static_cast<std::int64_t>(r.uleb())));
        break;
      }
      default:
        return false;
    }
    if (r.bad || r.p > r.end) return false;
  }
  return true;
}

// The walk's rule from the row in force at the return address.
FrameRule rule_of_row(const Row& row, bool signal_frame) {
  constexpr FrameRule kComplexRule = FrameRule::of_kind(FrameRule::kComplex);
  if (signal_frame || row.cfa_other || row.rsp_ruled) return kComplexRule;
  if (row.ra.kind == RegisterRule::kUndefined) return FrameRule::of_kind(FrameRule::kEnd);
  if (row.ra.kind != RegisterRule::kAtOffset || row.ra.offset != -8) return kComplexRule;
  // The return address, at CFA - 8, lies in the frame: an rsp-based CFA is at least 8 above.
  if (row.cfa_register == kRsp ? row.cfa_offset < 8 : row.cfa_register != kRbp) return kComplexRule;
  if (row.cfa_offset > INT32_MAX || row.cfa_offset < INT32_MIN) return kComplexRule;
  std::int16_t rbp_offset = 0;
  if (row.rbp.kind == RegisterRule::kAtOffset) {
    if (row.rbp.offset > -8 || row.rbp.offset < INT16_MIN) return kComplexRule;
    rbp_offset = static_cast<std::int16_t>(row.rbp.offset);
  } else if (row.rbp.kind != RegisterRule::kSame) {
    return kComplexRule;
  }
  return FrameRule::simple(row.cfa_register == kRbp, static_cast<std::int32_t>(row.cfa_offset),
                           rbp_offset);
}

// The rule at `pc` from the FDE at `fde`; kEnd when pc is outside the function it describes.
FrameRule rule_from_fde(const std::uint8_t* fde, std::uintptr_t pc) {
  constexpr FrameRule complex = FrameRule::of_kind(FrameRule::kComplex);
  const std::uint8_t* body;
  const std::uint8_t* end;
  if (!entry_bounds(fde, body, end)) return complex;
  Reader r{body, end};
  const auto cie_offset = r.fixed<std::uint32_t>();
  Cie cie;
  if (cie_offset == 0 || !parse_cie(body - cie_offset, cie)) return complex;
  const std::uintptr_t begin = r.pointer(cie.fde_encoding);
  const std::uintptr_t range = r.pointer(cie.fde_encoding & 0x0f);
  if (r.bad) return complex;
  if (pc - begin >= range) return FrameRule::of_kind(FrameRule::kEnd);
  if (cie.has_augmentation_data) r.p += r.uleb();
  if (r.bad || r.p > r.end) return complex;
  Row initial;
  if (!run_program(Reader{cie.instructions, cie.end}, cie, 0, UINTPTR_MAX, initial, initial))
    return complex;
  Row row = initial;
  if (!run_program(r, cie, begin, pc, initial, row)) return complex;
  return rule_of_row(row, cie.signal_frame);
}

// What dl_iterate_phdr's callback looks for: the loaded object that holds `pc`, and its search
// table of FDEs (the PT_GNU_EH_FRAME segment, .eh_frame_hdr).
struct ObjectSearch {
  std::uintptr_t pc;
  unsigned long long unloads = 0;
  bool found = false;
  const std::uint8_t* table = nullptr;
  std::size_t table_size = 0;
};

int find_object(dl_phdr_info* info, std::size_t, void* data) {
  auto& search = *static_cast<ObjectSearch*>(data);
  search.unloads = info->dlpi_subs;  // the same count in every object's entry
  const ElfW(Phdr)* eh_frame_hdr = nullptr;
  bool holds = false;
  for (std::size_t i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_LOAD) {
      holds = holds || search.pc - (info->dlpi_addr + segment.p_vaddr) < segment.p_memsz;
    } else if (segment.p_type == PT_GNU_EH_FRAME) {
      eh_frame_hdr = &segment;
    }
  }
  if (!holds) return 0;
  search.found = true;
  if (eh_frame_hdr != nullptr) {
    search.table = reinterpret_cast<const std::uint8_t*>(info->dlpi_addr + eh_frame_hdr->p_vaddr);
    search.table_size = eh_frame_hdr->p_memsz;
  }
  return 1;
}

// The FDE that may cover pc, by binary search of the sorted table of .eh_frame_hdr; nullptr
// when pc lies before every function. False when the table is not in the usual encoding.
bool search_table(const std::uint8_t* table, std::size_t size, std::uintptr_t pc,
                  const std::uint8_t*& fde) {
  fde = nullptr;
  const auto base = reinterpret_cast<std::uintptr_t>(table);
  Reader r{table, table + size};
  const auto version = r.fixed<std::uint8_t>();
  const auto frame_encoding = r.fixed<std::uint8_t>();
  const auto count_encoding = r.fixed<std::uint8_t>();
  const auto table_encoding = r.fixed<std::uint8_t>();
  if (version != 1 || count_encoding == kOmit || table_encoding != kDataRelativeSigned4)
    return false;
  r.pointer(frame_encoding, base);
  const std::uintptr_t count = r.pointer(count_encoding, base);
  if (r.bad || count > static_cast<std::uintptr_t>(r.end - r.p) / 8) return false;
  const std::uint8_t* entries = r.p;
  const auto location = [&](std::uintptr_t i) {
    std::int32_t value;
    std::memcpy(&value, entries + 8 * i, 4);
    return base + static_cast<std::uintptr_t>(std::int64_t{value});
  };
  // The last entry whose function starts at or before pc.
  std::uintptr_t low = 0;
  std::uintptr_t high = count;
  while (low < high) {
    const std::uintptr_t mid = low + (high - low) / 2;
    if (location(mid) <= pc) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  if (low == 0) return true;
  std::int32_t offset;
  std::memcpy(&offset, entries + 8 * (low - 1) + 4, 4);
  fde = reinterpret_cast<const std::uint8_t*>(base +
                                              static_cast<std::uintptr_t>(std::int64_t{offset}));
  return true;
}

}  // namespace

LookedUpRule frame_rule_of(std::uintptr_t pc) {
  constexpr FrameRule end = FrameRule::of_kind(FrameRule::kEnd);
  constexpr FrameRule complex = FrameRule::of_kind(FrameRule::kComplex);
  const std::uintptr_t inside = pc - 1;  // in the call, or in the instruction the walk starts at
  ObjectSearch search{inside};
  dl_iterate_phdr(find_object, &search);
  // No loaded object holds it: JIT code, or not code at all.
  if (pc == 0 || !search.found) return {end, search.unloads};
  const std::uint8_t* fde;
  // Without a search table (an object linked without --eh-frame-hdr), libunwind scans .eh_frame.
  if (search.table == nullptr || !search_table(search.table, search.table_size, inside, fde))
    return {complex, search.unloads};
  return {fde == nullptr ? end : rule_from_fde(fde, inside), search.unloads};
}

}  // namespace poolalloc::internal
