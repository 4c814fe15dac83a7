#include "stack_walk_shapes.hpp"

namespace stack_walk_shapes {

void o0_chain(int depth, Probe probe) {
  volatile int keep = depth;
  if (depth == 0) {
    probe();
  } else {
    o0_chain(depth - 1, probe);
  }
  keep = keep + 1;
}

}  // namespace stack_walk_shapes
