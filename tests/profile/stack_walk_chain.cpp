// A chain of calls `depth` deep that ends in a call of `probe`, built once per way of compiling
// (CMakeLists.txt): STACK_WALK_CHAIN names each build's function.
#include "stack_walk_shapes.hpp"

namespace stack_walk_shapes {

// The volatile store after the call keeps it from being a tail call, which would leave no frame.
[[gnu::noinline]] void STACK_WALK_CHAIN(int depth, Probe probe) {
  volatile int keep = depth;
  if (depth == 0) {
    probe();
  } else {
    STACK_WALK_CHAIN(depth - 1, probe);
  }
  keep = keep + 1;
}

}  // namespace stack_walk_shapes
