#!/usr/bin/env bash
# Instructions that whole workloads execute under each allocator (callgrind's Ir, user space, the
# process and its threads), for costs of a few percent that wall time on a shared machine cannot
# resolve: the count does not depend on what else the machine runs. It counts work, not cache
# misses or waits. Only deterministic rows: single-threaded ones, or whose threads never wait
# for each other by spinning, at bench.sh's quick sizes.
#
#   scripts/workload-instructions.sh [--allocators LIST] [--workloads LIST] [--poolalloc LIB]
#                                    [--bin-dir DIR]
#
#   --allocators  entries as bench.sh takes them (scripts/allocators.sh), default "poolalloc";
#                 their settings (NAME=WHAT:VAR=VALUE) are applied
#   --workloads   of churn sweep-64 sweep-4096 mixed-t1 mixed-50k larson-t1 game game-tags
#                 python sqlite (default: all)
#   --poolalloc, --bin-dir   default build-suite's (cmake --build --preset suite)
#
# Prints a markdown table: millions of instructions per row and allocator, and each allocator's
# ratio to the first.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
allocators=poolalloc
workloads="churn sweep-64 sweep-4096 mixed-t1 mixed-50k larson-t1 game game-tags python sqlite"
poolalloc=$root/build-suite/src/libpoolalloc.so
bin_dir=$root/build-suite/bench/workloads
while (($#)); do
  case $1 in
    --allocators) allocators=${2//,/ }; shift ;;
    --workloads) workloads=${2//,/ }; shift ;;
    --poolalloc) poolalloc=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
poolalloc=$(realpath "$poolalloc")
# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/poolalloc-instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PYTHONMALLOC=malloc  # python's row, as bench.sh runs it
sed "s/ROWS/20000/" "$root/bench/programs/sqlite.sql" >"$work/sqlite.sql"

command_of() {  # the row's command, bench.sh's at --quick
  case $1 in
    churn) echo "$bin_dir/churn --scale=quick" ;;
    sweep-*) echo "$bin_dir/sweep --scale=quick --size=${1#sweep-}" ;;
    mixed-t1) echo "$bin_dir/mixed --scale=quick --threads=1" ;;
    mixed-50k) echo "$bin_dir/mixed --scale=quick --window=50000" ;;
    larson-t1) echo "$bin_dir/larson --scale=quick --threads=1" ;;
    game) echo "$bin_dir/game --scale=quick" ;;
    game-tags) echo "$bin_dir/game --scale=quick --tags=1" ;;
    python) echo "/usr/bin/python3 $root/bench/programs/objects.py 20000" ;;
    sqlite) echo "/usr/bin/sqlite3 :memory: .read\\ $work/sqlite.sql" ;;
    *) echo "workload-instructions.sh: unknown workload '$1'" >&2; return 1 ;;
  esac
}

instructions() {  # instructions ENTRY ROW: millions of instructions
  local dir="$work/$RANDOM$RANDOM" lib settings command
  mkdir "$dir"
  lib=$(library_of "$1" "$poolalloc")
  mapfile -t settings < <(settings_of "$1")
  eval "command=($(command_of "$2"))"
  (cd "$dir" && env -u LD_PRELOAD ${lib:+LD_PRELOAD=$lib} "${settings[@]}" valgrind \
    --tool=callgrind --trace-children=yes --callgrind-out-file="$dir/cg.%p" \
    "${command[@]}" >"$dir/log" 2>&1) || {
    echo "workload-instructions.sh: $2 under $1 failed:" >&2
    tail -5 "$dir/log" >&2
    return 1
  }
  cat "$dir"/cg.* | awk '/^totals:/ { total += $2 } END { printf "%.1f", total / 1e6 }'
}

read -ra entries <<<"$allocators"
header="| workload |"
rule="|---|"
for entry in "${entries[@]}"; do header+=" ${entry%%=*} |" rule+="---:|"; done
for entry in "${entries[@]:1}"; do header+=" ${entry%%=*} / ${entries[0]%%=*} |" rule+="---:|"; done
echo "Millions of instructions (callgrind Ir), $(date -u +%Y-%m-%d), poolalloc" \
  "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
echo "$header"
echo "$rule"
for row in $workloads; do
  counts=()
  for entry in "${entries[@]}"; do counts+=("$(instructions "$entry" "$row")"); done
  line="| $row |"
  for count in "${counts[@]}"; do line+=" $count |"; done
  for count in "${counts[@]:1}"; do
    line+=" $(awk -v a="$count" -v b="${counts[0]}" 'BEGIN { printf "%.4f", a / b }') |"
  done
  echo "$line"
done
