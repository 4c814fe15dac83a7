#include "stack_walk_shapes.hpp"

namespace stack_walk_shapes {

[[gnu::noinline]] void library_chain(int depth, Probe probe) {
  volatile int keep = depth;
  if (depth == 0) {
    probe();
  } else {
    library_chain(depth - 1, probe);
  }
  keep = keep + 1;
}

}  // namespace stack_walk_shapes
