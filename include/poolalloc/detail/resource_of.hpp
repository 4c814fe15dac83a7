// What makes a wrapper of a std::pmr::memory_resource (Synchronized<PoolResource>,
// Tracked<PoolResource>) a memory_resource itself, so that pmr containers allocate through the
// wrapper: its lock, its samples. A wrapper derives from ResourceBase<Arena, Wrapper>, which is
// ResourceOf<Wrapper> over a memory_resource and an empty base over any other arena; the virtual
// calls go to the wrapper's own allocate(bytes, alignment) and deallocate(p, bytes, alignment).
#pragma once

#include <cstddef>
#include <memory_resource>
#include <type_traits>

namespace poolalloc::detail {

template <class Wrapper>
class ResourceOf : public std::pmr::memory_resource {
 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return static_cast<Wrapper&>(*this).allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    static_cast<Wrapper&>(*this).deallocate(p, bytes, alignment);
  }
  // Equal to itself only, as the resources it wraps: a block goes back through the wrapper that
  // gave it.
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

struct NotAResource {};

template <class Arena, class Wrapper>
using ResourceBase = std::conditional_t<std::is_base_of_v<std::pmr::memory_resource, Arena>,
                                        ResourceOf<Wrapper>, NotAResource>;

}  // namespace poolalloc::detail
