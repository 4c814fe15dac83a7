// A handle saved by one run of the program, to an object that died before the save, must not
// resolve in the next run, whose pools are made in the same order: every pool's generations start
// at a seed that differs from run to run (detail/handle_table.hpp). Two ctest runs of this
// program, `save FILE` then `load FILE` (tests/toolkit/CMakeLists.txt).
#include <poolalloc/object_pool.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace {

struct Soldier {
  explicit Soldier(int soldier_id) : id(soldier_id) {}
  int id;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "save") != 0 && std::strcmp(argv[1], "load") != 0)) {
    std::fprintf(stderr, "usage: %s save|load FILE\n", argv[0]);
    return 2;
  }
  // The first pool of its type in both runs.
  poolalloc::Pool<Soldier> soldiers(4);
  if (std::strcmp(argv[1], "save") == 0) {
    Soldier* dead = soldiers.spawn(1);
    const poolalloc::Handle<Soldier> dangling = soldiers.handle_of(dead);
    soldiers.despawn(dead);
    std::ofstream(argv[2]) << dangling.packed() << '\n';
    std::printf("saved a dangling handle\n");
    return 0;
  }
  std::uint64_t bits = 0;
  if (!(std::ifstream(argv[2]) >> bits)) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  const Soldier* recruit = soldiers.spawn(99);  // into the slot the dead soldier had
  const Soldier* found = soldiers.get(poolalloc::Handle<Soldier>::from_packed(bits));
  if (found != nullptr) {
    std::printf("the dangling handle resolves to a new object (id %d)\n", found->id);
    return 1;
  }
  std::printf("the dangling handle resolves to nothing (recruit %d)\n", recruit->id);
  return 0;
}
