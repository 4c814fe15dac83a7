// Call shapes for the stack walk's test (stack_walk_test.cpp), each in a file built as its name
// says, each ending in a call of `probe`, which captures the stack there.
#pragma once

namespace stack_walk_shapes {

using Probe = void (*)();

// stack_walk_chain.cpp, built -O0 (frame pointers, every value on the stack).
void o0_chain(int depth, Probe probe);
// stack_walk_chain.cpp and stack_walk_shapes_o2.cpp, built -O2 -fomit-frame-pointer.
void o2_chain(int depth, Probe probe);
void o2_leaf_caller(Probe probe);        // no frame of its own but the return address
void o2_alloca(int bytes, Probe probe);  // rbp-based CFA
void o2_realigned(Probe probe);          // the stack realigned to 64 bytes, the CFA from rbp
// stack_walk_chain.cpp, built -O2 -fno-omit-frame-pointer.
void fp_chain(int depth, Probe probe);
// stack_walk_chain.cpp, a shared library built -O2.
void library_chain(int depth, Probe probe);

}  // namespace stack_walk_shapes
