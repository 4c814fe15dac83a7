#!/usr/bin/env bash
# Builds toolkit_bench (Release) and prints its medians as a markdown table:
#   workload | poolalloc ns/pair | baseline ns/pair | ratio (baseline / poolalloc)
# Benchmarks run interleaved in random order, REPETITIONS times (default 9); figures are medians
# of CPU time per allocate+free pair (per create for the creation rows). Then runs the
# particle-system example (bench/particles.cpp), which prints its time per frame and budgets.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-bench"  # CMakePresets.json: preset toolkit-bench
repetitions=${REPETITIONS:-9}

(cd "$root" && cmake --preset toolkit-bench >/dev/null &&
  cmake --build --preset toolkit-bench >/dev/null)

json="$build/toolkit_bench.json"
"$build/bench/toolkit_bench" --benchmark_repetitions="$repetitions" \
  --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=0.1 --benchmark_format=json --benchmark_out="$json" \
  --benchmark_out_format=json >/dev/null

python3 - "$json" <<'PY'
import json, sys

data = json.load(open(sys.argv[1]))
ns = {b["run_name"]: 1e9 / b["items_per_second"]
      for b in data["benchmarks"] if b.get("aggregate_name") == "median"}

rows = [("churn 10,000 x 64 B, random free order: Pool<T> vs new/delete",
         "churn_pool_spawn_despawn", "churn_new_delete"),
        ("churn 10,000 x 64 B, random free order: FixedPool vs malloc/free",
         "churn_fixed_pool", "churn_malloc_free"),
        ("churn 10,000 x 64 B, random free order: Pool<T> (bitmap) vs FixedPool (index links)",
         "churn_pool_spawn_despawn", "churn_fixed_pool")]
for size in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
    rows.append((f"sweep {size} B, batch of 1,000: FixedPool vs malloc/free",
                 f"sweep_fixed_pool/{size}", f"sweep_malloc_free/{size}"))

print(f"Machine: {data['context'].get('host_name', '?')}, {data['context']['num_cpus']} CPUs; "
      f"medians of {sys.argv[1].split('/')[-1]}")
print()
print("| workload | poolalloc ns/pair | baseline ns/pair | ratio |")
print("|---|---:|---:|---:|")
for label, ours, theirs in rows:
    print(f"| {label} | {ns[ours]:.2f} | {ns[theirs]:.2f} | {ns[theirs] / ns[ours]:.1f}x |")
print()
print("| FixedPool creation (16 B blocks) | 1 K blocks ns | 10 M blocks ns | 10 M / 1 K |")
print("|---|---:|---:|---:|")
for label, name in (("over caller memory", "create_over_caller_memory"),
                    ("allocating its memory", "create_owned")):
    small, large = ns[f"{name}/1000"], ns[f"{name}/10000000"]
    print(f"| {label} | {small:.1f} | {large:.1f} | {large / small:.1f}x |")
PY

echo
"$build/bench/toolkit_particles"
