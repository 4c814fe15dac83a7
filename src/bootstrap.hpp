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

// True in the thread that forks, from the prepare handler that holds the allocator's locks for
// fork() to the parent or child handler that releases them (bootstrap.cpp): the one thread that
// must never wait for a lock held for fork, since it holds them itself (in another library's
// fork handler, or a signal handler, that runs meanwhile).
bool holds_locks_for_fork();

}  // namespace poolalloc::internal
