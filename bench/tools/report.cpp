// bench-report: turns the per-run CSV of scripts/bench.sh into the markdown tables and the
// gnuplot data of the comparison.
//   bench-report RAW.csv ALLOCATORS MARKDOWN_OUT TIME_DAT_OUT RSS_DAT_OUT [STATS CCDF_DAT_OUT]
// RAW.csv: round,workload,allocator,wall_ms,maxrss_kb,exit (with that header line).
// ALLOCATORS: comma-separated, in column order. Medians over the runs that exited with 0;
// ratios are allocator / poolalloc (above 1: poolalloc is faster or smaller). The .dat files
// hold, per workload, each allocator's median relative to glibc (the first allocator when
// glibc was not run), for the chart.
// STATS: the statistics that the latency workload wrote, a line "WORKLOAD ALLOCATOR ROUND NAME
// VALUE" per figure and "WORKLOAD ALLOCATOR ROUND hist NS COUNT" per histogram bucket. They
// add a table per workload, each figure the median over the rounds, to MARKDOWN_OUT, and the
// complementary CDF of the time per call (the fraction of calls that took at least NS, all
// rounds pooled) to CCDF_DAT_OUT: a block per workload and allocator, headed by its title.
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

// The latency table and the data of its chart.
void latency_report(const char* stats_path, const std::vector<std::string>& allocators,
                    std::ostream& md, const char* ccdf_path) {
  struct Figure {
    const char* name;
    const char* label;
    int decimals;
  };
  static const Figure figures[] = {
      {"call_p50_ns", "per call, median (ns)", 1},
      {"call_p99_ns", "per call, 99th percentile (ns)", 1},
      {"call_p99.9_ns", "per call, 99.9th percentile (ns)", 1},
      {"call_p99.99_ns", "per call, 99.99th percentile (ns)", 1},
      {"call_max_ns", "per call, worst (ns)", 0},
      {"calls_over_10us", "calls over 10 µs", 0},
      {"calls_over_100us", "calls over 100 µs", 0},
      {"frame_p50_us", "per frame, median (µs)", 1},
      {"frame_p99_us", "per frame, 99th percentile (µs)", 1},
      {"frame_max_us", "worst frame (µs)", 1},
      {"level_p50_ms", "level change frame, median (ms)", 2},
      {"level_max_ms", "level change frame, worst (ms)", 2},
      {"timer_overhead_ns", "timer overhead, subtracted (ns)", 1},
      {"timer_resolution_ns", "timer resolution (ns)", 1},
  };
  std::vector<std::string> workloads;
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::vector<double>>> values;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
  std::ifstream in(stats_path);
  std::string workload, allocator, round, name;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    double value = 0, count = 0;
    if (!(fields >> workload >> allocator >> round >> name >> value)) continue;
    if (std::find(workloads.begin(), workloads.end(), workload) == workloads.end())
      workloads.push_back(workload);
    if (name == "hist" && fields >> count)
      buckets[{workload, allocator}].emplace_back(value, count);
    else
      values[{workload, allocator}][name].push_back(value);
  }

  std::ofstream ccdf(ccdf_path);
  for (auto& w : workloads) {
    md << "### Allocator time per call and per frame (" << w << ")\n\n| figure |";
    for (auto& a : allocators) md << ' ' << a << " |";
    md << "\n|---|";
    for (std::size_t a = 0; a < allocators.size(); ++a) md << "---:|";
    md << '\n';
    for (auto& f : figures) {
      md << "| " << f.label << " |";
      for (auto& a : allocators)
        md << ' ' << fixed(median(values[{w, a}][f.name]), f.decimals) << " |";
      md << '\n';
    }
    md << '\n';
    for (auto& a : allocators) {
      auto& b = buckets[{w, a}];
      if (b.empty()) continue;
      std::sort(b.begin(), b.end());
      double total = 0;
      for (auto& [ns, count] : b) total += count;
      ccdf << '"' << (workloads.size() > 1 ? w + " " : "") << a << "\"\n";
      double before = 0;
      for (auto& [ns, count] : b) {
        ccdf << ns << ' ' << (total - before) / total << '\n';
        before += count;
      }
      ccdf << "\n\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 8) {
    std::fprintf(stderr,
                 "usage: %s RAW.csv ALLOCATORS MARKDOWN_OUT TIME_DAT RSS_DAT [STATS CCDF_DAT]\n",
                 argv[0]);
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
  if (argc == 8) latency_report(argv[6], allocators, md, argv[7]);
  return 0;
}
