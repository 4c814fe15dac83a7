#!/usr/bin/env bash
# The latency workload (bench/workloads/latency.cpp) for Windows under wine, in interleaved rounds:
# the C runtime's heap (windows_latency_crt) and libpoolalloc.a's C API
# (windows_latency_poolalloc), built by the mingw preset's build folder. Prints a table of the
# medians over the rounds of each figure that the workload's --stats file holds.
#   scripts/windows-latency.sh [--rounds N] [--scale smoke|quick|full] [--build DIR]
# Wine's heap is not Windows': the C runtime's figures are wine's (docs/benchmarks.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5 scale=quick build=$root/build-mingw
while (($#)); do
  case $1 in
  --rounds) rounds=$2 ;;
  --scale) scale=$2 ;;
  --build) build=$2 ;;
  *)
    echo "usage: $0 [--rounds N] [--scale smoke|quick|full] [--build DIR]" >&2
    exit 2
    ;;
  esac
  shift 2
done
cmake --build "$build" --target windows_latency_crt windows_latency_poolalloc >/dev/null
export WINEPREFIX=$build/wine WINEDEBUG=-all
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
heaps=(crt poolalloc)
for ((round = 0; round < rounds; round++)); do
  # The first heap of each round alternates.
  for ((i = 0; i < ${#heaps[@]}; i++)); do
    heap=${heaps[(i + round) % ${#heaps[@]}]}
    checksum=$(wine "$build/bench/windows_latency_$heap.exe" "--scale=$scale" \
      "--stats=$work/$heap.$round.txt" | tr -d '\r')
    echo "round $round, $heap: $checksum" >&2
    echo "$checksum" >>"$work/$heap.checksums"
  done
done
if [[ $(sort -u "$work"/*.checksums | wc -l) != 1 ]]; then
  echo "the checksums differ between the heaps" >&2
  exit 1
fi
printf '| figure (median of %d rounds, --scale=%s) | C runtime (wine) | poolalloc |\n|---|---:|---:|\n' \
  "$rounds" "$scale"
# median HEAP FIGURE: the median over the rounds of FIGURE in HEAP's stats files.
median() {
  cat "$work/$1".*.txt | tr -d '\r' | awk -v f="$2" '$1 == f { print $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
for figure in calls call_p50_ns call_p99_ns call_p99.9_ns call_p99.99_ns call_max_ns \
  calls_over_10us calls_over_100us frame_p50_us frame_p99_us frame_max_us level_p50_ms \
  level_max_ms; do
  printf '| %s | %s | %s |\n' "$figure" "$(median crt "$figure")" "$(median poolalloc "$figure")"
done
