// What the toolkit does at its few throws and catches, so that its headers also build with
// exceptions off (-fno-exceptions, as many game engines build): where it would throw it reports
// and aborts instead, and it catches nothing.
#pragma once

#include <new>
#include <type_traits>

#include "cold.hpp"
#include "message.hpp"

namespace poolalloc::detail {

// Throws E (made from `what` where E takes a message); without exceptions, writes `what` to
// stderr and aborts.
template <class E>
[[noreturn, POOLALLOC_COLD]] void throw_or_abort(const char* what) {
#if defined(__cpp_exceptions)
  if constexpr (std::is_constructible_v<E, const char*>) {
    throw E(what);
  } else {
    throw E();
  }
#else
  Message message;
  message << what;
  fatal(message);
#endif
}

// Returns attempt(); when it throws, calls undo() and lets the exception go on.
template <class Attempt, class Undo>
decltype(auto) undo_on_throw(Attempt&& attempt, [[maybe_unused]] Undo&& undo) {
#if defined(__cpp_exceptions)
  try {
    return attempt();
  } catch (...) {
    undo();
    throw;
  }
#else
  return attempt();
#endif
}

// Whether attempt() returned rather than threw std::bad_alloc. Without exceptions nothing is
// caught: a std::vector that cannot grow ends the program, as every one in such a build does.
template <class Attempt>
bool returns_without_bad_alloc(Attempt&& attempt) {
#if defined(__cpp_exceptions)
  try {
    attempt();
  } catch (const std::bad_alloc&) {
    return false;
  }
#else
  attempt();
#endif
  return true;
}

}  // namespace poolalloc::detail
