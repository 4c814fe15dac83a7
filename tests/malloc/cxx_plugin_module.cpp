// A C++ library that no_cxx_runtime_test, a C program, opens with RTLD_GLOBAL once it has
// started: its C++ runtime then joins the global scope, and operator new, poolalloc's, must
// behave as the standard says through it. Each function returns 1 when it did.
#include <cstddef>
#include <cstdint>
#include <new>

#define MODULE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// More than any allocator can give, hidden from the compiler.
std::size_t huge() {
  volatile std::size_t size = SIZE_MAX / 4;
  return size;
}

// An alignment that is not a power of two, hidden from the compiler (clang refuses a constant).
std::align_val_t odd_alignment() {
  volatile std::size_t alignment = 48;
  return std::align_val_t{alignment};
}

int g_handler_calls = 0;
// A new-handler that can do nothing once: it gives up its place, so the next failure throws.
void handler_that_gives_up() {
  ++g_handler_calls;
  std::set_new_handler(nullptr);
}

}  // namespace

MODULE_EXPORT int plugin_new_throws_bad_alloc() {
  try {
    ::operator delete(::operator new(huge()));
  } catch (const std::bad_alloc&) {
    return 1;
  }
  return 0;
}

MODULE_EXPORT int plugin_new_calls_the_handler_then_throws() {
  g_handler_calls = 0;
  std::set_new_handler(handler_that_gives_up);
  try {
    delete[] new char[huge()];
  } catch (const std::bad_alloc&) {
    return g_handler_calls == 1 ? 1 : 0;
  }
  return 0;
}

MODULE_EXPORT int plugin_nothrow_new_calls_the_handler_then_returns_null() {
  g_handler_calls = 0;
  std::set_new_handler(handler_that_gives_up);
  char* p = new (std::nothrow) char[huge()];
  return p == nullptr && g_handler_calls == 1 ? 1 : 0;
}

MODULE_EXPORT int plugin_aligned_new_refuses_an_alignment_not_a_power_of_two() {
  try {
    ::operator delete(::operator new(64, odd_alignment()), odd_alignment());
  } catch (const std::bad_alloc&) {
    return ::operator new(64, odd_alignment(), std::nothrow) == nullptr ? 1 : 0;
  }
  return 0;
}

MODULE_EXPORT int plugin_aligned_new_throws_bad_alloc() {
  try {
    ::operator delete (::operator new (huge(), std::align_val_t{64}), std::align_val_t{64});
  } catch (const std::bad_alloc&) {
    return ::operator new (huge(), std::align_val_t{64}, std::nothrow) == nullptr ? 1 : 0;
  }
  return 0;
}

MODULE_EXPORT int plugin_small_new_works() {
  int* values = new int[10]{};
  values[9] = 7;
  const int result = values[9] == 7 ? 1 : 0;
  delete[] values;
  return result;
}
