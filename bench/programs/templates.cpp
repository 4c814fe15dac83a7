// Whole-program workload: g++ compiling a template-heavy file (the compiler's allocations are
// measured, not this code). COPIES (default 8; scripts/bench.sh sets it with -DCOPIES=N) scales
// the work: each copy instantiates standard containers, variants, tuples, ranges and a
// compile-time recursion over distinct types.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <ranges>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#ifndef COPIES
#define COPIES 8
#endif

template <int N>
struct Tag {
  static constexpr int value = N;
};

template <int N, int Depth>
struct Chain {
  using Next = Chain<N, Depth - 1>;
  static constexpr unsigned long value = Next::value * 3 + Depth + N;
};
template <int N>
struct Chain<N, 0> {
  static constexpr unsigned long value = N;
};

template <int N>
long work(int seed) {
  using Key = std::tuple<int, std::string, Tag<N>*>;
  using Value = std::variant<int, double, std::string, std::vector<Tag<N>>>;
  std::map<Key, Value> map;
  std::unordered_map<std::string, std::vector<std::pair<int, Tag<N>>>> index;
  std::set<std::tuple<long, Tag<N>*, std::string>> ordered;
  for (int i = 0; i < seed; ++i) {
    map.emplace(Key{i, std::to_string(i), nullptr}, Value{std::to_string(i * N)});
    index[std::to_string(i)].emplace_back(i, Tag<N>{});
    ordered.emplace(i * 2L, nullptr, std::string(static_cast<std::size_t>(i % 7), 'x'));
  }
  long total = 0;
  for (auto& [key, value] : map)
    total += std::visit(
        [](auto& v) -> long {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>)
            return static_cast<long>(v.size());
          else if constexpr (std::is_same_v<T, std::vector<Tag<N>>>)
            return static_cast<long>(v.size());
          else
            return static_cast<long>(v);
        },
        value);
  auto evens = index | std::views::filter([](auto& kv) { return kv.second.size() % 2 == 0; }) |
               std::views::transform([](auto& kv) { return kv.first.size(); });
  for (auto n : evens) total += static_cast<long>(n);
  std::vector<std::function<long(long)>> fns{[](long x) { return x + N; },
                                             [](long x) { return x * static_cast<long>(Chain<N, 40>::value & 0xffff); }};
  for (auto& f : fns) total = f(total);
  auto shared = std::make_shared<std::vector<std::string>>(ordered.size(), "s");
  total += std::accumulate(shared->begin(), shared->end(), 0L,
                           [](long acc, const std::string& s) { return acc + static_cast<long>(s.size()); });
  std::vector<long> sorted(map.size());
  std::iota(sorted.begin(), sorted.end(), 0L);
  std::ranges::sort(sorted, std::greater{});
  return total + (sorted.empty() ? 0 : sorted.front());
}

template <int... Ns>
long all(std::integer_sequence<int, Ns...>) {
  return (work<Ns>(Ns + 1) + ...);
}

int main() { return static_cast<int>(all(std::make_integer_sequence<int, COPIES>{}) & 0x7f); }
