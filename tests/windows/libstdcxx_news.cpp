// Which news of a Windows program reach the pools, by how the program links the C++ runtime.
// Built twice (tests/windows/CMakeLists.txt): with -static, as docs/windows.md says to link, and
// with libstdc++-6.dll (POOLALLOC_TEST_LIBSTDCXX_DLL). Not a GoogleTest program: GoogleTest
// deletes the string streams it creates, which the DLL build cannot do (below).
//
//   libstdcxx_news news    prints where each kind of new went and exits with 0 when that is what
//                          the build's link predicts: with -static every new is the pools';
//                          with the DLL, those that libstdc++'s compiled code makes are the C
//                          runtime's, the program's own are the pools'.
//   libstdcxx_news delete  deletes a std::stringstream that the program's new created. Its
//                          deleting destructor is compiled into libstdc++, and calls
//                          libstdc++'s operator delete: with the DLL, the C runtime's free,
//                          given a block of the pools (the process dies before it prints
//                          "deleted"); with -static, poolalloc's delete (exit status 0).
#include <poolalloc/poolalloc.h>
#include <windows.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

#ifdef POOLALLOC_TEST_LIBSTDCXX_DLL
constexpr bool libstdcxx_dll = true;
#else
constexpr bool libstdcxx_dll = false;
#endif

std::uint64_t pooled_requests() {
  poolalloc_stats stats{};
  poolalloc_get_stats(&stats);
  return stats.pooled_requests;
}

// Longer than any string's inline buffer: a block of the heap.
constexpr const char* message = "a message long enough to need a block of the heap for itself";

int failures = 0;
void expect(const char* what, std::uint64_t got, std::uint64_t expected) {
  std::printf("%s: %llu\n", what, static_cast<unsigned long long>(got));
  if (got != expected) {
    std::printf("  FAILED: expected %llu\n", static_cast<unsigned long long>(expected));
    ++failures;
  }
}

int news() {
  expect("libstdc++-6.dll loaded", GetModuleHandleA("libstdc++-6.dll") != nullptr, libstdcxx_dll);

  std::uint64_t before = pooled_requests();
  auto* value = new std::uint64_t{42};
  expect("pooled requests of a new expression of the program", pooled_requests() - before, 1);
  delete value;

  // std::runtime_error(const char*) is compiled into libstdc++: its copy of the message is made
  // by libstdc++'s code, with whichever operator new that code was linked to.
  before = pooled_requests();
  const std::runtime_error error(message);
  expect("pooled requests of std::runtime_error's copy of its message", pooled_requests() - before,
         libstdcxx_dll ? 0 : 1);

  // basic_ostringstream<char> is instantiated inside libstdc++ (an extern template): its buffer
  // grows there. str() builds its result there too, and the program's inline destructor of
  // that string gives the block to the program's operator delete: with the DLL, a block of the
  // C runtime, which poolalloc's delete hands to the C runtime's free.
  std::ostringstream stream;
  before = pooled_requests();
  stream << message << message;
  expect("pooled requests of std::ostringstream's buffer", pooled_requests() - before,
         libstdcxx_dll ? 0 : 1);
  const std::string text = stream.str();
  expect("the string of str() is the pools'", poolalloc_owns(text.data()) != 0, !libstdcxx_dll);
  expect("its length", text.size(), 2 * std::strlen(message));

  // The object itself comes from the program's new expression: the pools' either way.
  auto* shared = new std::stringstream;
  expect("new std::stringstream is the pools'", poolalloc_owns(shared) != 0, 1);
  if (!libstdcxx_dll) delete shared;  // with the DLL, `delete` would be the C runtime's free
  return failures == 0 ? 0 : 1;
}

int delete_stringstream() {
  auto* stream = new std::stringstream;
  *stream << message;
  std::printf("deleting a std::stringstream of the pools at %p\n", static_cast<void*>(stream));
  std::fflush(stdout);
  delete stream;
  std::printf("deleted\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "news") == 0) return news();
  if (argc == 2 && std::strcmp(argv[1], "delete") == 0) return delete_stringstream();
  std::fprintf(stderr, "usage: %s news|delete\n", argv[0]);
  return 2;
}
