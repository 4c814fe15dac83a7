#include <alloca.h>

#include <cstring>

#include "stack_walk_shapes.hpp"

namespace stack_walk_shapes {

[[gnu::noinline]] void o2_leaf_caller(Probe probe) {
  probe();
  asm volatile("");  // no tail call
}

[[gnu::noinline]] void o2_alloca(int bytes, Probe probe) {
  auto* block = static_cast<char*>(alloca(static_cast<unsigned>(bytes)));
  std::memset(block, 1, static_cast<unsigned>(bytes));
  asm volatile("" : : "r"(block) : "memory");
  probe();
  asm volatile("" : : "r"(block) : "memory");
}

[[gnu::noinline]] void o2_realigned(Probe probe) {
  alignas(64) char block[64];
  std::memset(block, 1, sizeof block);
  asm volatile("" : : "r"(block) : "memory");
  probe();
  asm volatile("" : : "r"(block) : "memory");
}

}  // namespace stack_walk_shapes
