// Names a code address for a report: "function+0x1f (module)", from the module's own symbol
// table where it has one (so static functions of the program are named too). Allocates
// nothing, so it can run inside malloc.
#pragma once

#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

void append_call_site(detail::Message& message, const void* address);

}  // namespace poolalloc::internal
