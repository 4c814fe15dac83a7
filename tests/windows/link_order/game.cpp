// A game whose own code makes no new: its engine (engine.cpp, a static library) does. Built
// twice (CMakeLists.txt): with the engine before libpoolalloc.a on the link line, as
// docs/windows.md says to link, where the engine's new is the pools'; and after it, where the
// linker has taken nothing of the archive for operator new and the engine keeps libstdc++'s, the
// C runtime's heap, silently. Exits with 0 when the pools served what the build's order predicts.
#include <poolalloc/poolalloc.h>

#include <cstdint>
#include <cstdio>

std::uint64_t* engine_make_value();
void engine_destroy_value(std::uint64_t* value);

int main() {
  poolalloc_stats before{};
  poolalloc_get_stats(&before);
  std::uint64_t* value = engine_make_value();
  poolalloc_stats after{};
  poolalloc_get_stats(&after);
  engine_destroy_value(value);
  const unsigned long long pooled = after.pooled_requests - before.pooled_requests;
  std::printf("pooled requests of the engine's new: %llu\n", pooled);
  return pooled == POOLALLOC_TEST_EXPECTED_POOLED ? 0 : 1;
}
