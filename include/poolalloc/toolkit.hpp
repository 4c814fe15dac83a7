// The whole game toolkit in one include.
#pragma once

#include "fixed_pool.hpp"       // FixedPool: Kenwright's fixed-size block pool
#include "frame_allocator.hpp"  // FrameAllocator, DoubleBufferedFrameAllocator
#include "node_size.hpp"        // node_layout<Container>, node_pool<Container>
#include "object_pool.hpp"      // Pool<T>, Handle<T>
#include "pmr.hpp"              // PoolResource, FrameResource, StackResource, StlAllocator
#include "stack_allocator.hpp"  // StackAllocator, StackScope
#include "synchronized.hpp"     // Synchronized<Arena>
#include "tracking.hpp"         // Tracked<Arena>, print_budgets
