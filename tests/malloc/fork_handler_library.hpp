// The test-side interface of fork_handler_library.cpp.
#pragma once

extern "C" {
void fork_handlers_allocate(bool in_prepare, bool in_child);
void fork_handlers_call(void (*prepare)(), void (*parent)(), void (*child)());
bool fork_handlers_registered_first();
int fork_handlers_first_prepare_pooled();
}
