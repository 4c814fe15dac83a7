// Names a code address for a report: "function+0x1f (module)", from the module's own symbol
// table where it has one (so static functions of the program are named too), the module by its
// full path. Allocates nothing and asks the dynamic loader nothing, so it can run inside malloc
// with the debug heap's lock held.
#pragma once

#include "poolalloc/detail/message.hpp"

namespace poolalloc::internal {

void append_call_site(detail::Message& message, const void* address);

}  // namespace poolalloc::internal
