#include <poolalloc/node_size.hpp>

#include <poolalloc/pmr.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using poolalloc::FixedPool;
using poolalloc::NodeLayout;
using poolalloc::StlAllocator;

// A standard allocator that notes the size and alignment of each single-object request: what a
// node container really asks for its nodes as it inserts.
template <class T>
class NodeRecorder {
 public:
  using value_type = T;
  explicit NodeRecorder(std::vector<NodeLayout>* seen) noexcept : seen_(seen) {}
  template <class U>
  NodeRecorder(const NodeRecorder<U>& other) noexcept : seen_(other.seen()) {}
  T* allocate(std::size_t n) {
    if (n == 1) seen_->push_back({sizeof(T), alignof(T)});
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  [[nodiscard]] std::vector<NodeLayout>* seen() const noexcept { return seen_; }
  template <class U>
  bool operator==(const NodeRecorder<U>& other) const noexcept {
    return seen_ == other.seen();
  }

 private:
  std::vector<NodeLayout>* seen_;
};

// Inserts a few elements into Container<..., NodeRecorder> and returns the distinct layouts of its
// single-object requests.
template <class Container, class Insert>
std::vector<NodeLayout> requested_nodes(Insert insert) {
  using Recorder = NodeRecorder<typename Container::value_type>;
  std::vector<NodeLayout> seen;
  {
    auto container = Container(Recorder(&seen));
    for (int i = 0; i < 20; ++i) insert(container, i);
  }
  std::vector<NodeLayout> distinct;
  for (const NodeLayout& layout : seen) {
    if (std::find(distinct.begin(), distinct.end(), layout) == distinct.end())
      distinct.push_back(layout);
  }
  return distinct;
}

template <class T>
using Recorded = NodeRecorder<T>;

// The probe answers what the containers really ask when they insert, in this build's standard
// library (libstdc++ here and under mingw-w64): the one size of their single-object requests.
TEST(NodeLayout, IsWhatNodeContainersRequestForEachNode) {
  using List = std::list<int, Recorded<int>>;
  EXPECT_EQ(requested_nodes<List>([](List& c, int i) { c.push_back(i); }),
            std::vector<NodeLayout>{poolalloc::node_layout<std::list<int>>()});
  using ForwardList = std::forward_list<std::uint64_t, Recorded<std::uint64_t>>;
  EXPECT_EQ(requested_nodes<ForwardList>(
                [](ForwardList& c, int i) { c.push_front(static_cast<std::uint64_t>(i)); }),
            std::vector<NodeLayout>{poolalloc::node_layout<std::forward_list<std::uint64_t>>()});
  using Map =
      std::map<int, std::string, std::less<int>, Recorded<std::pair<const int, std::string>>>;
  using PlainMap = std::map<int, std::string>;
  EXPECT_EQ(requested_nodes<Map>([](Map& c, int i) { c.emplace(i, "name"); }),
            std::vector<NodeLayout>{poolalloc::node_layout<PlainMap>()});
  using Set = std::set<double, std::less<double>, Recorded<double>>;
  EXPECT_EQ(requested_nodes<Set>([](Set& c, int i) { c.insert(i * 0.5); }),
            std::vector<NodeLayout>{poolalloc::node_layout<std::set<double>>()});
  using UnorderedMap = std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                                          Recorded<std::pair<const int, int>>>;
  using PlainUnorderedMap = std::unordered_map<int, int>;
  EXPECT_EQ(requested_nodes<UnorderedMap>([](UnorderedMap& c, int i) { c.emplace(i, i); }),
            std::vector<NodeLayout>{poolalloc::node_layout<PlainUnorderedMap>()});
}

// What libstdc++ asks on x86-64 (a list node: two links and the value; a tree node: colour, three
// links and the value; a hash node: a link and the value, int's hash not cached).
#if defined(__GLIBCXX__) && defined(__x86_64__)
TEST(NodeLayout, MatchesLibstdcxxNodesOnX8664) {
  EXPECT_EQ(poolalloc::node_layout<std::list<int>>(), (NodeLayout{24, 8}));
  EXPECT_EQ((poolalloc::node_layout<std::map<int, int>>()), (NodeLayout{40, 8}));
  EXPECT_EQ(poolalloc::node_layout<std::set<int>>(), (NodeLayout{40, 8}));
  EXPECT_EQ((poolalloc::node_layout<std::unordered_map<int, int>>()), (NodeLayout{16, 8}));
}
#endif

TEST(NodeLayout, IsNothingForAContainerWithoutNodes) {
  EXPECT_EQ(poolalloc::node_layout<std::vector<int>>(), NodeLayout{});
}

struct alignas(32) Particle {
  float position[3];
};

// A FixedPool sized for the nodes of the container that will use it, whatever allocator the
// container names: exactly `count` elements fit, the next insertion throws.
TEST(NodePool, HoldsExactlyCountNodesOfTheContainer) {
  using Particles = std::list<Particle, StlAllocator<Particle, FixedPool>>;
  FixedPool nodes = poolalloc::node_pool<Particles>(100);
  EXPECT_EQ(nodes.capacity(), 100u);
  EXPECT_EQ(nodes.alignment(), alignof(Particle));
  Particles particles{StlAllocator<Particle, FixedPool>(nodes)};
  for (int i = 0; i < 100; ++i) particles.push_back({});
  EXPECT_EQ(nodes.used_count(), 100u);
  EXPECT_THROW(particles.push_back({}), std::bad_alloc);
  particles.clear();
  EXPECT_EQ(nodes.used_count(), 0u);

  using Names = std::map<int, std::string, std::less<int>,
                         StlAllocator<std::pair<const int, std::string>, FixedPool>>;
  FixedPool name_nodes = poolalloc::node_pool<Names>(8, poolalloc::Growth::growable);
  Names names{StlAllocator<std::pair<const int, std::string>, FixedPool>(name_nodes)};
  for (int i = 0; i < 20; ++i) names.emplace(i, "n");
  EXPECT_EQ(name_nodes.used_count(), 20u);
}

}  // namespace
