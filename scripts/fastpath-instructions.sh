#!/usr/bin/env bash
# Instructions per malloc(64)/free pair on the fast path, for every allocator, counted by
# valgrind's callgrind (deterministic, unlike timings on a shared machine). bench/workloads/
# fastpath does a warm-up and then N pairs in a hot loop; it runs under each allocator through
#   valgrind --tool=callgrind --trace-children=yes env LD_PRELOAD=LIB fastpath --pairs=N
# (callgrind does not replace malloc, so the preloaded one serves the calls) at N = 1M and 2M,
# and (Ir(2M) - Ir(1M)) / 1M is the cost of one pair, start-up and warm-up cancelled out.
#
#   scripts/fastpath-instructions.sh [--size BYTES] [--allocators LIST] [--out FILE]
#                                    [--no-build --poolalloc LIB --bin-dir DIR]
#                                    [--budget-from FILE]
# Prints a markdown table (and writes it to FILE too). --budget-from: the pair's figure stated
# in FILE's comment ("a malloc(64)/free pair ... measures N instructions", src/allocator.hpp) is
# a budget, and the script fails when poolalloc's pair exceeds it (a test of the g++ build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
size=64
allocators="glibc jemalloc mimalloc tcmalloc poolalloc"
out=""
build=1
poolalloc=""
bin_dir=""
budget_from=""
while (($#)); do
  case $1 in
    --size) size=$2; shift ;;
    --allocators) allocators=${2//,/ }; shift ;;
    --out) out=$2; shift ;;
    --no-build) build=0 ;;
    --poolalloc) poolalloc=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --budget-from) budget_from=$2; shift ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
command -v valgrind >/dev/null || { echo "fastpath: valgrind is not installed" >&2; exit 1; }
budget=""
if [[ -n $budget_from ]]; then
  budget=$(tr '\n' ' ' <"$budget_from" | sed -n 's|.*free pair[^.]* measures \([0-9][0-9]*\) instructions.*|\1|p')
  [[ -n $budget ]] || { echo "fastpath: no 'pair ... measures N instructions' in $budget_from" >&2; exit 1; }
  allocators=poolalloc
fi

build_dir="$root/build-suite"  # CMakePresets.json: preset suite
if ((build)); then
  (cd "$root" && cmake --preset suite >/dev/null &&
    cmake --build --preset suite --target poolalloc workload_fastpath >/dev/null)
fi
poolalloc=${poolalloc:-$build_dir/src/libpoolalloc.so}
program=${bin_dir:-$build_dir/bench/workloads}/fastpath

# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/poolalloc-fastpath.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Instructions of the fastpath process (not of env, which it replaces by exec).
instructions() {  # instructions LIB PAIRS
  local dir="$work/$RANDOM$RANDOM"
  mkdir "$dir"
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$dir/cg.%p" \
    env LD_PRELOAD="$1" "$program" --pairs="$2" --size="$size" >"$dir/log" 2>&1 || {
    echo "fastpath: callgrind failed:" >&2
    tail -5 "$dir/log" >&2
    return 1
  }
  local file total=0
  for file in "$dir"/cg.*; do
    grep -q "^cmd:.*fastpath" "$file" || continue
    total=$((total + $(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file")))
  done
  echo "$total"
}

n1=1000000
n2=2000000
{
  echo "### Fast path: instructions per malloc($size)/free pair"
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(valgrind --version), callgrind Ir;"
  echo "  poolalloc $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- (Ir(N=2M) - Ir(N=1M)) / 1M, after a warm-up of 10,000 pairs, one thread, hot loop of"
  echo "  malloc($size), a store, a load and free (bench/workloads/fastpath.cpp; the loop's own"
  echo "  instructions, about 10, are included)."
  echo
  echo "| allocator | Ir at N=1M | Ir at N=2M | instructions per pair |"
  echo "|---|---:|---:|---:|"
  for allocator in $allocators; do
    if ! lib=$(library_of "$allocator" "$poolalloc" 2>/dev/null) || [[ -n $lib && ! -e $lib ]]; then
      echo "fastpath: skipping $allocator (no library)" >&2
      continue
    fi
    i1=$(instructions "$lib" $n1)
    i2=$(instructions "$lib" $n2)
    per_pair=$(awk -v a="$i1" -v b="$i2" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
    echo "| $allocator | $i1 | $i2 | $per_pair |"
    if [[ -n $budget ]] && awk -v n="$per_pair" -v b="$budget" 'BEGIN { exit !(n > b) }'; then
      echo "fastpath: $per_pair instructions per pair, over the $budget stated in $budget_from" >&2
      exit 1
    fi
  done
} | tee "${out:-/dev/null}"
