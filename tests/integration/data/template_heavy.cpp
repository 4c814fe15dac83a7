// A compile-heavy C++20 program for the g++ integration test: many distinct template
// instantiations (type lists, tuples, variants, maps, ranges, constexpr tables) so that
// cc1plus allocates a great deal, and a deterministic output when it runs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <ranges>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace heavy {

// A distinct type per integer, each with its own containers and member templates.
template <int N>
struct Node {
  static constexpr int id = N;
  std::map<std::string, std::vector<int>> table;
  std::optional<std::tuple<int, std::string, double>> extra;

  void fill() {
    for (int i = 0; i < N % 7 + 3; ++i) table["k" + std::to_string(i * N)].push_back(i + N);
    extra = std::make_tuple(N, std::to_string(N * 3), N * 0.5);
  }
  [[nodiscard]] std::uint64_t digest() const {
    std::uint64_t h = 1469598103934665603ULL;
    for (const auto& [key, values] : table) {
      for (char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
      for (int v : values) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
    }
    if (extra) h ^= static_cast<std::uint64_t>(std::get<0>(*extra)) << 7;
    return h;
  }
};

// Compile-time tables, a different one per instantiation.
template <int N>
constexpr std::array<int, 32> make_table() {
  std::array<int, 32> t{};
  for (int i = 0; i < 32; ++i) t[i] = (i * i + N) % 97;
  return t;
}

template <typename... Ts>
struct TypeList {};

template <typename List, int N>
struct Append;
template <typename... Ts, int N>
struct Append<TypeList<Ts...>, N> {
  using type = TypeList<Ts..., Node<N>>;
};

template <int From, int To, typename List = TypeList<>>
struct MakeList {
  using type = typename MakeList<From + 1, To, typename Append<List, From>::type>::type;
};
template <int To, typename List>
struct MakeList<To, To, List> {
  using type = List;
};

template <typename List>
struct Run;
template <typename... Ts>
struct Run<TypeList<Ts...>> {
  static std::uint64_t all() {
    std::tuple<Ts...> nodes;
    std::apply([](auto&... n) { (n.fill(), ...); }, nodes);
    std::uint64_t sum = 0;
    std::apply([&sum](const auto&... n) { ((sum += n.digest() + make_table<std::decay_t<decltype(n)>::id>()[5]), ...); },
               nodes);
    return sum;
  }
};

// Variants over many alternatives, visited with overloaded lambdas.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};

using Value = std::variant<int, long, double, std::string, std::vector<int>, std::map<int, std::string>,
                           std::pair<int, int>, std::optional<std::string>, std::set<long>>;

std::string describe(const Value& v) {
  return std::visit(
      Overloaded{
          [](int i) { return "int " + std::to_string(i); },
          [](long l) { return "long " + std::to_string(l); },
          [](double d) { return "double " + std::to_string(static_cast<long>(d * 100)); },
          [](const std::string& s) { return "string " + s; },
          [](const std::vector<int>& v) { return "vector " + std::to_string(std::accumulate(v.begin(), v.end(), 0)); },
          [](const std::map<int, std::string>& m) { return "map " + std::to_string(m.size()); },
          [](const std::pair<int, int>& p) { return "pair " + std::to_string(p.first * p.second); },
          [](const std::optional<std::string>& o) { return "optional " + o.value_or("none"); },
          [](const std::set<long>& s) { return "set " + std::to_string(s.empty() ? 0 : *s.rbegin()); },
      },
      v);
}

// Binary visitation: 81 combinations instantiated.
std::size_t combine(const Value& a, const Value& b) {
  return std::visit([](const auto& x, const auto& y) { return sizeof(x) * 31 + sizeof(y); }, a, b);
}

// Ranges pipelines over several element types.
template <typename T>
std::vector<T> pipeline(int n) {
  auto view = std::views::iota(0, n) | std::views::filter([](int i) { return i % 3 != 0; }) |
              std::views::transform([](int i) { return static_cast<T>(i * 2); }) | std::views::reverse |
              std::views::take(n / 2);
  std::vector<T> out;
  for (T x : view) out.push_back(x);
  std::ranges::sort(out);
  return out;
}

}  // namespace heavy

int main() {
  using namespace heavy;
  std::uint64_t total = 0;
  total += Run<MakeList<0, 45>::type>::all();
  total += Run<MakeList<45, 90>::type>::all();
  total += Run<MakeList<90, 135>::type>::all();
  std::printf("nodes digest %llu\n", static_cast<unsigned long long>(total));

  std::vector<Value> values{1,
                            2L,
                            3.25,
                            std::string("four"),
                            std::vector<int>{1, 2, 3, 4, 5},
                            std::map<int, std::string>{{1, "a"}, {2, "b"}},
                            std::pair<int, int>{6, 7},
                            std::optional<std::string>{},
                            std::set<long>{8, 9, 10}};
  std::size_t mix = 0;
  for (const auto& a : values) {
    std::printf("%s\n", describe(a).c_str());
    for (const auto& b : values) mix = mix * 7 + combine(a, b);
  }
  std::printf("combine %zu\n", mix);

  auto a = pipeline<int>(1000);
  auto b = pipeline<long>(2000);
  auto c = pipeline<double>(3000);
  std::printf("ranges %zu %ld %zu %.1f\n", a.size(), b.back(), c.size(), c.front());

  std::unordered_map<std::string, std::function<int(int)>> ops{
      {"double", [](int x) { return 2 * x; }},
      {"square", [](int x) { return x * x; }},
      {"negate", [](int x) { return -x; }}};
  std::map<std::string, int> results;
  for (const auto& [name, op] : ops) results[name] = op(12);
  for (const auto& [name, r] : results) std::printf("%s %d\n", name.c_str(), r);
  return 0;
}
