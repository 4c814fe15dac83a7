// Initialisation: once, on whichever comes first of the first allocation slow path (possibly
// from the dynamic loader, before any constructor ran) and the library's constructor, which
// calls start_up().
#pragma once

namespace poolalloc::internal {

// Initialises the allocator if nobody has; true when the pools can serve requests (the
// region could be reserved). Safe from any thread at any time.
bool ensure_initialised();

// The library's constructor: initialises the allocator, reads the options if the first
// allocation came too early to, and makes the start-up reports the options ask for.
void start_up(bool debug_build);

}  // namespace poolalloc::internal
