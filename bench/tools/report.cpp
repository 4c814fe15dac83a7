// bench-report: turns the per-run CSV of scripts/bench.sh into the markdown tables and the
// gnuplot data of the comparison.
//   bench-report RAW.csv ALLOCATORS MARKDOWN_OUT TIME_DAT_OUT RSS_DAT_OUT
// RAW.csv: round,workload,allocator,wall_ms,maxrss_kb,exit (with that header line).
// ALLOCATORS: comma-separated, in column order. Medians over the runs that exited with 0;
// ratios are allocator / poolalloc (above 1: poolalloc is faster or smaller). The .dat files
// hold, per workload, each allocator's median relative to glibc (the first allocator when
// glibc was not run), for the chart.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Runs {
  std::vector<double> ms, kb;
  int failed = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string field;
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

std::string fixed(double v, int decimals) {
  if (std::isnan(v)) return "FAILED";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s RAW.csv ALLOCATORS MARKDOWN_OUT TIME_DAT RSS_DAT\n", argv[0]);
    return 2;
  }
  std::vector<std::string> allocators = split(argv[2], ',');
  std::ifstream raw(argv[1]);
  std::string line;
  std::getline(raw, line);  // header
  std::vector<std::string> workloads;
  std::map<std::pair<std::string, std::string>, Runs> runs;
  while (std::getline(raw, line)) {
    auto f = split(line, ',');
    if (f.size() != 6) continue;
    if (std::find(workloads.begin(), workloads.end(), f[1]) == workloads.end())
      workloads.push_back(f[1]);
    Runs& r = runs[{f[1], f[2]}];
    if (f[5] != "0") {
      ++r.failed;
      continue;
    }
    r.ms.push_back(std::stod(f[3]));
    r.kb.push_back(std::stod(f[4]));
  }

  auto index_of = [&](const std::string& name, std::size_t fallback) {
    auto it = std::find(allocators.begin(), allocators.end(), name);
    return it == allocators.end() ? fallback : static_cast<std::size_t>(it - allocators.begin());
  };
  const std::size_t ref = index_of("poolalloc", allocators.size() - 1);
  const std::size_t base = index_of("glibc", 0);
  const std::size_t n = allocators.size();

  std::ofstream md(argv[3]);
  std::ofstream time_dat(argv[4]);
  std::ofstream rss_dat(argv[5]);
  time_dat << "workload";
  rss_dat << "workload";
  for (auto& a : allocators) {
    time_dat << ' ' << a;
    rss_dat << ' ' << a;
  }
  time_dat << '\n';
  rss_dat << '\n';

  for (int table = 0; table < 2; ++table) {
    const bool is_time = table == 0;
    md << (is_time ? "### Median wall time (ms)\n\n" : "### Median peak RSS (MiB)\n\n");
    md << "| workload |";
    for (auto& a : allocators) md << ' ' << a << " |";
    for (std::size_t a = 0; a < n; ++a)
      if (a != ref) md << ' ' << allocators[a] << " / " << allocators[ref] << " |";
    md << "\n|---|";
    for (std::size_t a = 0; a < 2 * n - 1; ++a) md << "---:|";
    md << '\n';

    std::vector<double> log_sum(n, 0.0), log_ratio_sum(n, 0.0);
    std::vector<int> count(n, 0), ratio_count(n, 0);
    for (auto& w : workloads) {
      std::vector<double> med(n);
      std::vector<int> failed(n);
      for (std::size_t a = 0; a < n; ++a) {
        Runs& r = runs[{w, allocators[a]}];
        med[a] = median(is_time ? r.ms : r.kb);
        if (!is_time) med[a] /= 1024.0;
        failed[a] = r.failed;
      }
      md << "| " << w << " |";
      for (std::size_t a = 0; a < n; ++a) {
        md << ' ' << fixed(med[a], is_time ? 1 : 1);
        if (failed[a] && !std::isnan(med[a])) md << " (" << failed[a] << " failed)";
        md << " |";
        if (!std::isnan(med[a]) && med[a] > 0) {
          log_sum[a] += std::log(med[a]);
          ++count[a];
        }
      }
      for (std::size_t a = 0; a < n; ++a) {
        if (a == ref) continue;
        double ratio = med[a] / med[ref];
        md << ' ' << fixed(ratio, 2) << " |";
        if (!std::isnan(ratio) && ratio > 0) {
          log_ratio_sum[a] += std::log(ratio);
          ++ratio_count[a];
        }
      }
      md << '\n';
      std::ofstream& dat = is_time ? time_dat : rss_dat;
      dat << w;
      for (std::size_t a = 0; a < n; ++a) dat << ' ' << fixed(med[a] / med[base], 4);
      dat << '\n';
    }
    md << "| **geometric mean** |";
    for (std::size_t a = 0; a < n; ++a)
      md << ' ' << (count[a] ? fixed(std::exp(log_sum[a] / count[a]), 1) : "-") << " |";
    for (std::size_t a = 0; a < n; ++a)
      if (a != ref)
        md << " **"
           << (ratio_count[a] ? fixed(std::exp(log_ratio_sum[a] / ratio_count[a]), 2) : "-")
           << "** |";
    md << "\n\n";
  }
  return 0;
}
