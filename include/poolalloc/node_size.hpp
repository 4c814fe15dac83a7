// The size and alignment of the nodes that a node container (std::list, std::forward_list,
// std::map, std::set, std::unordered_map, their multi forms) allocates one at a time, so that a
// FixedPool for a StlAllocator can be sized without guessing: foonathan/memory's
// list_node_size<T>, EASTL's fixed containers.
//
//   using Particles = std::list<Particle, poolalloc::StlAllocator<Particle, poolalloc::FixedPool>>;
//   poolalloc::FixedPool nodes = poolalloc::node_pool<Particles>(1000);  // 1000 nodes' blocks
//   Particles particles{poolalloc::StlAllocator<Particle, poolalloc::FixedPool>(nodes)};
//
// No standard trait names a container's node type, and its layout is the library's own, so the
// layout is found at run time, portably (libstdc++, mingw-w64's included, libc++, MSVC's STL): the
// container is built empty with a probe allocator, and a container stores its node allocator,
// which it builds from the allocator it is given by the converting constructor of the rebound
// allocator, whose type is the node's. The probe notes the largest of the types it is rebound to
// (a node, and with some libraries a smaller helper: MSVC's container proxy, libc++'s hash value),
// and what the container allocates at once (MSVC's list and map allocate their head node).
// Nothing is inserted: no element is built. O(1), a few nanoseconds; call it once, at start.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "debug_checks.hpp"
#include "fixed_pool.hpp"

namespace poolalloc {

struct NodeLayout {
  std::size_t size = 0;
  std::size_t alignment = 0;
  friend bool operator==(const NodeLayout&, const NodeLayout&) = default;
};

namespace detail {

// A standard allocator (std::allocator underneath) that notes in `seen` the layout of each type it
// is rebound to.
template <class T>
class NodeProbe {
 public:
  using value_type = T;

  explicit NodeProbe(NodeLayout* seen) noexcept : seen_(seen) {}
  template <class U>
  NodeProbe(const NodeProbe<U>& other) noexcept : seen_(other.seen()) {
    note();
  }

  [[nodiscard]] T* allocate(std::size_t n) {
    note();
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }

  [[nodiscard]] NodeLayout* seen() const noexcept { return seen_; }
  template <class U>
  bool operator==(const NodeProbe<U>& other) const noexcept {
    return seen_ == other.seen();
  }

 private:
  void note() const noexcept {
    // T is what the container allocates, a pointer where it is a bucket array.
    seen_->size = std::max(seen_->size, sizeof(T));  // NOLINT(bugprone-sizeof-expression)
    seen_->alignment = std::max(seen_->alignment, alignof(T));
  }

  NodeLayout* seen_;
};

template <class... Types>
struct TypeList {};

// Container<Args..., OldAllocator> as Container<Args..., Allocator>: the allocator is the last
// template argument of every standard container.
template <template <class...> class Container, class Allocator, class Kept, class... Rest>
struct ReplaceLast;
template <template <class...> class Container, class Allocator, class... Kept, class Last>
struct ReplaceLast<Container, Allocator, TypeList<Kept...>, Last> {
  using type = Container<Kept..., Allocator>;
};
template <template <class...> class Container, class Allocator, class... Kept, class First,
          class Second, class... Rest>
struct ReplaceLast<Container, Allocator, TypeList<Kept...>, First, Second, Rest...>
    : ReplaceLast<Container, Allocator, TypeList<Kept..., First>, Second, Rest...> {};

template <class Container, class Allocator>
struct WithAllocator;
template <template <class...> class Container, class Allocator, class... Args>
struct WithAllocator<Container<Args...>, Allocator>
    : ReplaceLast<Container, Allocator, TypeList<>, Args...> {};

}  // namespace detail

// The layout of the nodes that Container allocates one at a time, whatever allocator it names
// (the container is probed with its allocator replaced). {0, 0} for std::vector, which allocates
// nothing empty and no node ever. Not for std::deque, whose blocks of elements and array of
// pointers to them are no nodes: what it gives there (libstdc++: the array's pointer) is no block
// size that a FixedPool could serve it from.
template <class Container>
[[nodiscard]] NodeLayout node_layout() {
  using Probe = detail::NodeProbe<typename Container::value_type>;
  using Probed = typename detail::WithAllocator<Container, Probe>::type;
  NodeLayout seen;
  { const Probed probed = Probed(Probe(&seen)); }
  return seen;
}

// A FixedPool of `count` blocks that each hold one of Container's nodes, for a StlAllocator over
// it (created as FixedPool(size, count, alignment, growth, debug) is: check capacity()).
template <class Container>
[[nodiscard]] FixedPool node_pool(std::size_t count, Growth growth = Growth::fixed,
                                  DebugChecks debug = kDefaultDebugChecks) {
  const NodeLayout node = node_layout<Container>();
  return FixedPool(node.size, count, node.alignment, growth, debug);
}

}  // namespace poolalloc
