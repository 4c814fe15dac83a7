#!/usr/bin/env bash
# The latency workload records each of its allocator calls once: at --scale=smoke under the
# given library, its statistics hold every figure, its histogram's counts add up to its count of
# calls, and that count is the number of calls the program makes (below).
#   bench/check-latency-stats.sh LATENCY_BINARY LIBRARY
set -euo pipefail
stats=$(mktemp)
trap 'rm -f "$stats"' EXIT
LD_PRELOAD=$2 "$1" --scale=smoke --stats="$stats" >/dev/null

# Smoke: 40 frames, each with 8 arrays (a malloc, 5 reallocs and a free: 56 calls) and 64 jobs
# (a malloc and the worker's free: 128 calls); 2 levels of 2,000 objects; 7,704 objects spawned
# over the frames (seed 7). Every object is freed once, at its death, a level change or the end.
expected=$((40 * (56 + 128) + 2 * 2 * 2000 + 2 * 7704))
awk -v expected="$expected" '
  $1 == "hist" { histogram += $3; next }
  { figure[$1] = $2 }
  END {
    split("calls calls_over_10us calls_over_100us call_p50_ns call_p99_ns call_p99.9_ns " \
          "call_p99.99_ns call_max_ns frame_p50_us frame_p99_us frame_max_us level_p50_ms " \
          "level_max_ms timer_overhead_ns timer_resolution_ns", names, " ")
    for (i in names)
      if (!(names[i] in figure)) { print "missing: " names[i]; failed = 1 }
    if (figure["calls"] != expected) { print "calls " figure["calls"] ", expected " expected; failed = 1 }
    if (histogram != figure["calls"]) { print "histogram " histogram ", calls " figure["calls"]; failed = 1 }
    exit failed
  }' "$stats"
