// Initialisation: once, on whichever comes first of the first allocation slow path (possibly
// from the dynamic loader, before any constructor ran) and the library's constructor.
#pragma once

namespace poolalloc::internal {

// Initialises the allocator if nobody has; true when the pools can serve requests (the
// region could be reserved). Safe from any thread at any time.
bool ensure_initialised();

}  // namespace poolalloc::internal
