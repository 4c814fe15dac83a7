#include <poolalloc/object_pool.hpp>
#include <poolalloc/pmr.hpp>
#include <poolalloc/tracking.hpp>

#include <memory_resource>
#include <vector>

int main() {
  poolalloc::Pool<int> pool(8);
  auto answer = pool.make_unique(42);
  poolalloc::PoolResource resource;
  std::pmr::vector<int> values({1, 2, 3}, &resource);
  poolalloc::FrameAllocator frame(256);
  poolalloc::Tracked tracked(frame, 128);
  return *answer == 42 && values[2] == 3 && tracked.allocate(16) != nullptr ? 0 : 1;
}
