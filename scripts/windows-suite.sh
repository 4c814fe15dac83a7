#!/usr/bin/env bash
# The timing suite for Windows, under wine: the workloads of bench/ built for Windows twice by the
# mingw preset, on the C runtime's heap (windows_WORKLOAD_crt) and on libpoolalloc.a
# (windows_WORKLOAD_poolalloc), run in interleaved rounds. Prints a markdown table of the medians
# over the rounds, the ratio per row and the geometric mean, as scripts/bench.sh does on Linux;
# and, when the latency row runs, the medians of its figures per call and per frame.
#
#   scripts/windows-suite.sh [--rounds N] [--workloads LIST] [--threads LIST]
#                            [--scale smoke|quick|full] [--smoke] [--build DIR] [--no-build]
#
#   --rounds     default 5
#   --workloads  "churn sweep mixed prodcons larson game latency" (the default), or row names
#                such as sweep-64, larson-t2, mixed-50k
#   --threads    "1 2 4": thread counts of the scaling rows, mixed and larson
#   --scale      the workloads' sizes, default quick (bench.sh --quick's)
#   --smoke      one round at --scale smoke: checks that each row runs and prints the same
#                checksum under both heaps (ctest), never how fast anything is
#   --build DIR  the mingw preset's build folder (default build-mingw), whose workloads are built
#                first unless --no-build is given
#
# A run's time is the workload's own (bench/tools/wall_clock.cpp), without the start and the exit
# of the wine process, which take longer than the smaller rows. Each run's stdout (its checksum)
# must be the same under both heaps and in every round, or the script fails. Wine's heap is not
# Windows': the C runtime's column is wine's (docs/benchmarks.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5 scale=quick build=$root/build-mingw
workloads="churn sweep mixed prodcons larson game latency"
threads="1 2 4"
build_first=1
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --workloads) workloads=${2//,/ }; shift ;;
    --threads) threads=${2//,/ }; shift ;;
    --scale) scale=$2; shift ;;
    --smoke) rounds=1 scale=smoke ;;
    --build) build=$2; shift ;;
    --no-build) build_first=0 ;;
    -h | --help) usage ;;
    *) echo "windows-suite.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
[[ -f $build/CMakeCache.txt ]] || {
  echo "windows-suite.sh: $build is not configured: cmake --preset mingw" >&2
  exit 2
}
build=$(realpath "$build")  # wine takes an absolute WINEPREFIX only
if ((build_first)); then cmake --build "$build" --target windows_workloads >/dev/null; fi
# Every program runs as the mingw preset's tests run theirs: in the build's wine prefix, the
# session started apart from the program (cmake/run-under-wine.sh says why).
export WINEPREFIX=$build/wine WINEDEBUG=-all
wine=$root/cmake/run-under-wine.sh

# --- the rows: bench.sh's, for the workloads that Windows builds -----------------------------
row_names=()
row_commands=()  # the workload, then its arguments, separated by spaces
# add_row GROUP NAME WORKLOAD ARG...: the row NAME, run when --workloads names it or GROUP.
add_row() {
  local group=$1 name=$2 w
  shift 2
  for w in $workloads; do
    if [[ $w == "$group" || $w == "$name" ]]; then
      row_names+=("$name")
      row_commands+=("$* --scale=$scale")
      return
    fi
  done
}
add_row churn churn churn
for size in 16 64 256 1024 4096 16384; do add_row sweep "sweep-$size" sweep "--size=$size"; done
for t in $threads; do add_row mixed "mixed-t$t" mixed "--threads=$t"; done
add_row mixed mixed-50k mixed --window=50000
add_row prodcons prodcons prodcons
for t in $threads; do add_row larson "larson-t$t" larson "--threads=$t"; done
add_row game game game
add_row latency latency latency
((${#row_names[@]})) || { echo "windows-suite.sh: no row selected by '$workloads'" >&2; exit 2; }

# --- the runs ------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/windows-suite.XXXXXX")
trap 'rm -rf "$work"' EXIT
heaps=(crt poolalloc)
declare -A reference
failures=0
for ((round = 0; round < rounds; round++)); do
  for ((r = 0; r < ${#row_names[@]}; r++)); do
    row=${row_names[r]}
    read -ra command <<<"${row_commands[r]}"
    for ((k = 0; k < ${#heaps[@]}; k++)); do
      heap=${heaps[(k + round + r) % ${#heaps[@]}]}  # the first heap alternates by round and row
      exe=$build/bench/windows_${command[0]}_$heap.exe
      stats=()
      if [[ $row == latency ]]; then stats=("--stats=$work/latency.$heap.$round.txt"); fi
      code=0
      "$wine" "$exe" "${command[@]:1}" "${stats[@]}" >"$work/out" 2>"$work/err" </dev/null ||
        code=$?
      checksum=$(tr -d '\r' <"$work/out")
      ms=$(tr -d '\r' <"$work/err" | awk '$1 == "wall_ms" { print $2 }')
      if ((code == 0)) && [[ -z $ms ]]; then code=98; fi
      if ((code == 0)); then
        if [[ -z ${reference[$row]+set} ]]; then
          reference[$row]=$checksum
        elif [[ $checksum != "${reference[$row]}" ]]; then
          echo "windows-suite.sh: $row under $heap printed '$checksum'," \
            "not '${reference[$row]}'" >&2
          code=99
        fi
      fi
      if ((code != 0)); then
        echo "windows-suite.sh: $row under $heap failed (exit $code):" >&2
        tail -n 5 "$work/out" "$work/err" >&2
        failures=$((failures + 1))
        continue
      fi
      echo "$row $heap $ms" >>"$work/times"
    done
  done
  echo "round $((round + 1))/$rounds done" >&2
done
((failures == 0)) || { echo "windows-suite.sh: $failures run(s) failed" >&2; exit 1; }

# --- the report ----------------------------------------------------------------------------
# median: the median of the numbers on stdin, one a line.
median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
echo "## The timing suite under wine ($rounds round(s), --scale=$scale)"
echo
echo "Median wall time of the workload in its process (ms); a ratio above 1 means poolalloc is faster."
echo
echo "| workload | C runtime (wine) | poolalloc | C runtime / poolalloc |"
echo "|---|---:|---:|---:|"
for row in "${row_names[@]}"; do
  for heap in "${heaps[@]}"; do
    awk -v row="$row" -v heap="$heap" '$1 == row && $2 == heap { print $3 }' "$work/times" | median
  done | paste -sd ' ' | awk -v row="$row" '{ printf "| %s | %.1f | %.1f | %.2f |\n", row, $1, $2, $1 / $2 }'
done | tee "$work/rows"
awk -F' *\\| *' '{ crt += log($3); pools += log($4); n++ }
  END { printf "| **geometric mean** | %.1f | %.1f | **%.2f** |\n", exp(crt / n), exp(pools / n),
        exp((crt - pools) / n) }' "$work/rows"

if [[ " ${row_names[*]} " == *" latency "* ]]; then
  echo
  echo "The latency row's figures per call and per frame (median of $rounds round(s)):"
  echo
  echo "| figure | C runtime (wine) | poolalloc |"
  echo "|---|---:|---:|"
  for figure in calls call_p50_ns call_p99_ns call_p99.9_ns call_p99.99_ns call_max_ns \
    calls_over_10us calls_over_100us frame_p50_us frame_p99_us frame_max_us level_p50_ms \
    level_max_ms; do
    printf '| %s' "$figure"
    for heap in "${heaps[@]}"; do
      printf ' | %s' "$(cat "$work/latency.$heap".*.txt | tr -d '\r' |
        awk -v f="$figure" '$1 == f { print $2 }' | median)"
    done
    echo " |"
  done
fi
