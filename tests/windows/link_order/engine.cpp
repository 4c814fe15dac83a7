// An engine's static library: the only caller of operator new in the program that links it.
#include <cstdint>

std::uint64_t* engine_make_value() {
  return new std::uint64_t{42};
}
void engine_destroy_value(std::uint64_t* value) {
  delete value;
}
