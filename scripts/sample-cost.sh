#!/usr/bin/env bash
# What one heap-profile sample costs (docs/profiling.md): the sweep workload (BATCH blocks of SIZE
# bytes allocated, then freed) run with the profile off and with sampling at a mean of MEAN bytes
# (by default 1: every allocation sampled), in interleaved rounds; the difference of the medians
# over the samples expected (pairs x (1 - e^(-SIZE/MEAN))) is the time of a sample, its malloc's
# and its free's share together. With --instructions, callgrind counts the same two runs once:
# the difference over the samples is a sample's instructions, which do not depend on the
# machine's load.
#
#   scripts/sample-cost.sh [--allocators LIST] [--rounds N] [--size BYTES] [--pairs N]
#                          [--batch N] [--mean BYTES] [--instructions] [--poolalloc LIB]
#                          [--bin-dir DIR]
#
#   --allocators  builds of poolalloc as bench.sh takes them (scripts/allocators.sh), e.g.
#                 "before=OLD/libpoolalloc.so.0 poolalloc"; default "poolalloc"
#   --rounds      default 9; --size default 4096; --pairs default 1000000; --batch default 1000;
#   --mean        default 1 (with the default mean of 512 KiB, give some 10 million pairs: a
#                 sample every 128 pairs of 4 KiB)
#   --poolalloc, --bin-dir   default build-suite's (cmake --build --preset suite)
#
# Prints a markdown table: per build, the medians (ms) off and sampled, and the cost of a sample
# in ns (and instructions).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
allocators=poolalloc
rounds=9
size=4096
pairs=1000000
batch=1000
mean=1
count_instructions=0
poolalloc=$root/build-suite/src/libpoolalloc.so
bin_dir=$root/build-suite/bench/workloads
while (($#)); do
  case $1 in
    --allocators) allocators=${2//,/ }; shift ;;
    --rounds) rounds=$2; shift ;;
    --size) size=$2; shift ;;
    --pairs) pairs=$2; shift ;;
    --batch) batch=$2; shift ;;
    --mean) mean=$2; shift ;;
    --instructions) count_instructions=1 ;;
    --poolalloc) poolalloc=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
poolalloc=$(realpath "$poolalloc")
# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/poolalloc-sample-cost.XXXXXX")
trap 'rm -rf "$work"' EXIT
command=("$bin_dir/sweep" "--size=$size" "--pairs=$pairs" "--batch=$batch")
sampled=(POOLALLOC_PROFILE=1 "POOLALLOC_PROFILE_SAMPLE=$mean" POOLALLOC_PROFILE_AT_EXIT=0)
samples=$(awk -v n="$pairs" -v s="$size" -v m="$mean" 'BEGIN { printf "%.0f", n * (1 - exp(-s / m)) }')

run() {  # run ENTRY MODE [PREFIX...]: the command under ENTRY, profile off or sampled
  local entry=$1 mode=$2 lib settings
  shift 2
  lib=$(library_of "$entry" "$poolalloc")
  mapfile -t settings < <(settings_of "$entry")
  [[ $mode == sampled ]] && settings+=("${sampled[@]}")
  (cd "$work" && env -u LD_PRELOAD -u POOLALLOC_PROFILE ${lib:+LD_PRELOAD=$lib} \
    "${settings[@]}" "$@" "${command[@]}" >/dev/null)
}

milliseconds() {  # milliseconds ENTRY MODE
  local start end
  start=$(date +%s%N)
  run "$1" "$2"
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}

instructions() {  # instructions ENTRY MODE: callgrind's Ir of the whole run
  rm -f "$work"/cg.*
  run "$1" "$2" valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" 2>/dev/null
  cat "$work"/cg.* | awk '/^totals:/ { total += $2 } END { print total }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

read -ra entries <<<"$allocators"
runs=()
for entry in "${entries[@]}"; do runs+=("$entry off" "$entry sampled"); done
for ((r = 0; r < rounds; ++r)); do
  # Each round starts one run later than the previous (A B C D, B C D A, ...).
  for ((i = 0; i < ${#runs[@]}; ++i)); do
    read -r entry mode <<<"${runs[(i + r) % ${#runs[@]}]}"
    milliseconds "$entry" "$mode" >>"$work/${entry%%=*}.$mode"
  done
done

echo "One sample's cost: sweep --size=$size --pairs=$pairs --batch=$batch, sampled at a mean of" \
  "$mean bytes ($samples samples expected) or not at all, medians of $rounds interleaved rounds," \
  "$(date -u +%Y-%m-%d), poolalloc" \
  "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
header="| build | off (ms) | sampled (ms) | ns per sample |"
rule="|---|---:|---:|---:|"
((count_instructions)) && header+=" instructions per sample |" rule+="---:|"
echo "$header"
echo "$rule"
for entry in "${entries[@]}"; do
  name=${entry%%=*}
  off=$(median <"$work/$name.off")
  on=$(median <"$work/$name.sampled")
  line="| $name | $(awk -v t="$off" 'BEGIN { printf "%.1f", t / 1000 }') |"
  line+=" $(awk -v t="$on" 'BEGIN { printf "%.1f", t / 1000 }') |"
  line+=" $(awk -v a="$on" -v b="$off" -v n="$samples" 'BEGIN { printf "%.0f", (a - b) * 1000 / n }') |"
  if ((count_instructions)); then
    off_ir=$(instructions "$entry" off)
    on_ir=$(instructions "$entry" sampled)
    line+=" $(awk -v a="$on_ir" -v b="$off_ir" -v n="$samples" 'BEGIN { printf "%.0f", (a - b) / n }') |"
  fi
  echo "$line"
done
