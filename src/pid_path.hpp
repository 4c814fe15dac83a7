// A path pattern of the options (POOLALLOC_STATS_FILE, POOLALLOC_TAG_CSV) for this process:
// "%p" replaced by its id, "%%" by "%".
#pragma once

#include <climits>  // PATH_MAX

#include <cstdint>
#include <cstring>
#include <string_view>

#include "os.hpp"
#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

// `pattern` expanded into `path`; false when the result is too long for a path.
inline bool expand_pid_path(const char* pattern, char (&path)[PATH_MAX]) {
  detail::Message pid;
  pid << static_cast<std::uint64_t>(os_process_id());
  std::size_t length = 0;
  for (const char* at = pattern; *at != '\0'; ++at) {
    std::string_view piece(at, 1);
    if (at[0] == '%' && at[1] == 'p') {
      piece = pid.text();
      ++at;
    } else if (at[0] == '%' && at[1] == '%') {
      ++at;
    }
    if (length + piece.size() >= sizeof path) return false;
    std::memcpy(path + length, piece.data(), piece.size());
    length += piece.size();
  }
  path[length] = '\0';
  return true;
}

}  // namespace poolalloc::internal
