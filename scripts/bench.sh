#!/usr/bin/env bash
# Compares poolalloc with glibc, jemalloc, mimalloc and tcmalloc on the workloads of bench/ and
# on whole programs (python3, sqlite3, g++, gawk, ruby), and on the programs of mimalloc-bench when given a
# built copy, every allocator put under the same unmodified binaries with LD_PRELOAD (glibc:
# nothing preloaded).
#
#   scripts/bench.sh [--quick | --smoke] [--rounds N] [--allocators LIST] [--workloads LIST]
#                    [--threads LIST] [--results DIR] [--no-install] [--exact-rss]
#                    [--no-build --poolalloc LIB --bin-dir DIR] [--mimalloc-bench DIR]
#
#   (default)  full sizes, 5 rounds; results in bench/results/ (results.md, bench.png,
#              latency.png, raw.csv)
#   --quick    smaller sizes, 3 rounds, under 2 minutes; results in build-suite/results-quick/
#   --smoke    every workload once, tiny, to check that the suite works (CI, ctest label bench);
#              never judges speed; skips baselines that are not installed and installs nothing;
#              results in build-suite/results-smoke/
#   --allocators "glibc jemalloc mimalloc tcmalloc poolalloc"   (space- or comma-separated; a
#                NAME=LIB entry preloads LIB under NAME, e.g. an older build of poolalloc;
#                NAME=WHAT:VAR=VALUE... runs WHAT (a library or an allocator's name, or several
#                joined with '+') with each VAR=VALUE in its environment, e.g.
#                profile=poolalloc:POOLALLOC_PROFILE=1 (scripts/allocators.sh))
#   --workloads  "churn sweep mixed prodcons larson game latency python sqlite gxx gawk ruby" (or row
#                names such as sweep-64, larson-t2, mixed-50k); "tags" adds game-tags, the game
#                with its subsystems under memory tags of poolalloc's (not run by default)
#   --threads    "1 2 4": thread counts of the scaling workloads, mixed and larson
#   --exact-rss  peak RSS read exactly, VmHWM at each process's exit under ptrace, instead of
#                ru_maxrss, which misses up to 128 KiB per CPU (bench/tools/runner.cpp); for
#                differences of tens of KiB
#   --no-build   use --poolalloc LIB and the workloads in --bin-dir DIR instead of building
#   --mimalloc-bench DIR   a checkout of daanx/mimalloc-bench whose programs are built in
#                DIR/out/bench (bench/README.md): adds its rows, group "mimalloc-bench", to the
#                default workloads; they run at mimalloc-bench's own sizes in every mode
#
# Rounds are interleaved: each round runs every workload under every allocator, back to back,
# starting with a different allocator each round (A B C D E, B C D E A, ...). Each run is timed
# by bench-runner (clock_gettime around fork/exec/wait; peak RSS from getrusage of the children)
# and its output (a checksum; for mimalloc-bench, the lines that are deterministic) must match
# across allocators. Reported: medians over the rounds. The latency row also times each of its
# allocator calls: its figures (the time per call and per frame, medians over the rounds) make a
# table of their own, and the distribution of the time per call a chart, latency.png.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mode=full
rounds=""
allocators="glibc jemalloc mimalloc tcmalloc poolalloc"
workloads="churn sweep mixed prodcons larson game latency python sqlite gxx gawk ruby"
workloads_given=""
threads="1 2 4"
results=""
install=1
build=1
poolalloc=""
bin_dir=""
mbench=""
exact_rss=()

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    --rounds) rounds=$2; shift ;;
    --allocators) allocators=${2//,/ }; shift ;;
    --workloads) workloads=${2//,/ } workloads_given=1; shift ;;
    --threads) threads=${2//,/ }; shift ;;
    --results) results=$2; shift ;;
    --no-install) install=0 ;;
    --exact-rss) exact_rss=(--exact-rss) ;;
    --no-build) build=0 ;;
    --poolalloc) poolalloc=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --mimalloc-bench) mbench=$2; shift ;;
    -h | --help) usage ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done

build_dir="$root/build-suite"  # CMakePresets.json: preset suite
case $mode in
  full) : "${rounds:=5}" "${results:=$root/bench/results}" ;;
  quick) : "${rounds:=3}" "${results:=$build_dir/results-quick}" ;;
  smoke) rounds=1 install=0 && : "${results:=$build_dir/results-smoke}" ;;
esac

# --- the allocators ------------------------------------------------------------------------
if ((install)); then "$root/scripts/install-deps.sh" --bench; fi
if ((build)); then
  echo "building poolalloc (Release) and the workloads in $build_dir" >&2
  (cd "$root" && cmake --preset suite >/dev/null && cmake --build --preset suite >/dev/null)
  poolalloc=${poolalloc:-$build_dir/src/libpoolalloc.so}
  bin_dir=${bin_dir:-$build_dir/bench/workloads}
fi
if [[ -z $poolalloc || -z $bin_dir ]]; then
  echo "bench.sh: --no-build needs --poolalloc LIB and --bin-dir DIR" >&2
  exit 2
fi
# The runs happen in a scratch directory (rptest writes a file into its working directory).
poolalloc=$(realpath "$poolalloc")
bin_dir=$(realpath "$bin_dir")
runner="$bin_dir/bench-runner"
if [[ -n $mbench ]]; then
  mbench=$(realpath "$mbench")
  [[ -x $mbench/out/bench/cfrac ]] || {
    echo "bench.sh: $mbench/out/bench/cfrac is missing: build mimalloc-bench (bench/README.md)" >&2
    exit 2
  }
  [[ $workloads_given ]] || workloads+=" mimalloc-bench"
fi

# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"
names=()
libs=()
settings=()  # each allocator's VAR=VALUE settings, separated by \x1f
for allocator in $allocators; do
  lib=$(library_of "$allocator" "$poolalloc")
  missing=""
  IFS=: read -ra parts <<<"$lib"
  for part in "${parts[@]}"; do [[ -e $part ]] || missing=$part; done
  if [[ -n $missing ]]; then
    if [[ $mode == smoke ]]; then
      echo "bench.sh: skipping $allocator: $missing is not installed" >&2
      continue
    fi
    echo "bench.sh: $allocator: $missing is missing (scripts/install-deps.sh --bench)" >&2
    exit 1
  fi
  names+=("${allocator%%=*}")
  libs+=("$lib")
  settings+=("$(settings_of "$allocator" | paste -sd $'\x1f' -)")
done
((${#names[@]})) || { echo "bench.sh: no allocator to run" >&2; exit 1; }

# --- the workloads -------------------------------------------------------------------------
# One row per measured configuration: its name, its group (what --workloads selects), the
# lines of its output that must match across allocators (an extended regex), where its time
# comes from, and the runner arguments (optional --in FILE and --env NAME=VALUE, then --, then
# the command), separated by \x1f.
work=$(mktemp -d "${TMPDIR:-/tmp}/poolalloc-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
scale=$mode
US=$'\x1f'
row_names=()
row_commands=()
row_checks=()
row_times=()
row_stats=()
stats="$work/stats.txt"  # where a row with --stats writes its statistics
unchecked='.^'  # matches no line: for output that is not deterministic (timings, rates)
# add_row GROUP NAME [--check REGEX] [--time AWK] [--stats] ARG...
#   --check  compare only the output lines that match REGEX (default: every non-empty line)
#   --time   the row's time in seconds is what the awk program AWK prints from the output, for
#            programs that run for a fixed time and report a rate (default: the wall time)
#   --stats  the command, given --stats=FILE, writes its statistics there ("NAME VALUE..."
#            lines); a run that writes none fails
add_row() {
  local group=$1 name=$2 check=. time="" with_stats=0 selected=0 w
  shift 2
  [[ $1 == --check ]] && { check=$2; shift 2; }
  [[ $1 == --time ]] && { time=$2; shift 2; }
  [[ $1 == --stats ]] && { with_stats=1; shift; set -- "$@" "--stats=$stats"; }
  for w in $workloads; do [[ $w == "$group" || $w == "$name" ]] && selected=1; done
  ((selected)) || return 0
  local IFS=$US
  row_names+=("$name")
  row_checks+=("$check")
  row_times+=("$time")
  row_stats+=("$with_stats")
  row_commands+=("$*")
}
case $mode in
  full) py_n=150000 sql_rows=200000 gxx_args=(-O1 -DCOPIES=4) ;;
  quick) py_n=20000 sql_rows=20000 gxx_args=(-O0 -DCOPIES=1) ;;
  smoke) py_n=2000 sql_rows=1000 gxx_args=(-O0 -DCOPIES=1) ;;
esac
sed "s/ROWS/$sql_rows/" "$root/bench/programs/sqlite.sql" >"$work/sqlite.sql"

add_row churn churn -- "$bin_dir/churn" --scale="$scale"
for size in 16 64 256 1024 4096 16384; do
  add_row sweep "sweep-$size" -- "$bin_dir/sweep" --scale="$scale" --size="$size"
done
for t in $threads; do
  add_row mixed "mixed-t$t" -- "$bin_dir/mixed" --scale="$scale" --threads="$t"
done
add_row mixed mixed-50k -- "$bin_dir/mixed" --scale="$scale" --window=50000
add_row prodcons prodcons -- "$bin_dir/prodcons" --scale="$scale"
for t in $threads; do
  add_row larson "larson-t$t" -- "$bin_dir/larson" --scale="$scale" --threads="$t"
done
add_row game game -- "$bin_dir/game" --scale="$scale"
# Only when named (group tags): the game's four subsystems each under a memory tag of poolalloc's.
add_row tags game-tags -- "$bin_dir/game" --scale="$scale" --tags=1
add_row latency latency --stats -- "$bin_dir/latency" --scale="$scale"
add_row python python --env PYTHONMALLOC=malloc -- /usr/bin/python3 \
  "$root/bench/programs/objects.py" "$py_n"
add_row sqlite sqlite -- /usr/bin/sqlite3 :memory: ".read $work/sqlite.sql"
add_row gxx gxx -- /usr/bin/g++ -std=c++20 "${gxx_args[@]}" -c \
  "$root/bench/programs/templates.cpp" -o "$work/templates.o"
# gawk and ruby at python's number of items; a smoke run skips one that is not installed.
if [[ -x /usr/bin/gawk || $mode != smoke ]]; then
  add_row gawk gawk -- /usr/bin/gawk -v N="$py_n" -f "$root/bench/programs/words.awk"
fi
if [[ -x /usr/bin/ruby || $mode != smoke ]]; then
  add_row ruby ruby -- /usr/bin/ruby "$root/bench/programs/objects.rb" "$py_n"
fi

# mimalloc-bench: the programs and arguments of its bench.sh, with P = 2 threads.
# shellcheck disable=SC2016  # the --time arguments are awk programs, not shell expansions
if [[ -n $mbench ]]; then
  mb=$mbench/out/bench
  src=$mbench/bench
  group=mimalloc-bench
  add_row $group cfrac -- "$mb/cfrac" 17545186520507317056371138836327483792789528
  add_row $group espresso -- "$mb/espresso" "$src/espresso/largest.espresso"
  add_row $group barnes --check 'Hack code|nbody|^ +[0-9]' --in "$src/barnes/input" -- "$mb/barnes"
  add_row $group larsonN --check "$unchecked" --time '/relative time:/ { print $NF + 0 }' \
    -- "$mb/larson" 5 8 1000 5000 100 4141 2
  add_row $group mstressN -- "$mb/mstress" 2 50 25
  add_row $group rptestN --check "$unchecked" \
    --time 'match($0, /[0-9]+ memory ops/) { print 2000000 / substr($0, RSTART) }' \
    -- "$mb/rptest" 2 0 1 2 500 1000 100 8 16000
  add_row $group alloc-test1 --check '^about to exit' -- "$mb/alloc-test" 1
  add_row $group alloc-testN --check '^about to exit' -- "$mb/alloc-test" 2
  add_row $group xmalloc-testN --check "$unchecked" --time '/^rtime:/ { print $2 + 0 }' \
    -- "$mb/xmalloc-test" -w 2 -t 5 -s 64
  for test in cache-thrash cache-scratch; do
    add_row $group "${test}1" -- "$mb/$test" 1 1000 1 2000000 2
    add_row $group "${test}N" -- "$mb/$test" 2 1000 1 2000000 2
  done
  add_row $group glibc-simple --check "$unchecked" -- "$mb/glibc-simple"
  add_row $group glibc-thread --check "$unchecked" --time '/iterations/ { print 1e9 / $1 }' \
    -- "$mb/glibc-thread" 2
  add_row $group malloc-large -- "$mb/malloc-large"
  add_row $group mleak10 -- "$mb/mleak" 5
  add_row $group mleak100 -- "$mb/mleak" 50
  add_row $group rbstress1 --check '^run with' -- ruby "$src/rbstress/stress_mem.rb" 1
  add_row $group rbstressN --check '^run with' -- ruby "$src/rbstress/stress_mem.rb" 2
  add_row $group z3 -- z3 -smt2 "$src/z3/test1.smt2"
elif [[ " $workloads " == *" mimalloc-bench "* ]]; then
  echo "bench.sh: the mimalloc-bench rows need --mimalloc-bench DIR" >&2
  exit 2
fi
((${#row_names[@]})) || { echo "bench.sh: no workload selected by '$workloads'" >&2; exit 1; }

# --- the runs ------------------------------------------------------------------------------
mkdir -p "$results"
raw="$results/raw.csv"
echo "round,workload,allocator,wall_ms,maxrss_kb,exit" >"$raw"
declare -A reference
failures=0
n=${#names[@]}
total=$((rounds * n * ${#row_names[@]}))
done_runs=0
started=$SECONDS
echo "mode $mode: $rounds round(s) x ${#row_names[@]} workloads x $n allocators ($total runs)" >&2
for ((round = 1; round <= rounds; ++round)); do
  for ((r = 0; r < ${#row_names[@]}; ++r)); do
    row=${row_names[r]}
    IFS=$US read -ra command <<<"${row_commands[r]}"
    for ((k = 0; k < n; ++k)); do
      a=$(((k + round - 1 + r) % n))  # rotate the starting allocator per round (and per row)
      out="$work/out.txt"
      rm -f "$stats"
      environment=()
      IFS=$US read -ra allocator_settings <<<"${settings[a]}"
      for setting in "${allocator_settings[@]}"; do environment+=(--env "$setting"); done
      read -r ms kb code < <(cd "$work" && "$runner" --preload "${libs[a]}" --out "$out" \
        "${environment[@]}" "${exact_rss[@]}" "${command[@]}")
      output=$(grep -E -- "${row_checks[r]}" "$out" | sort || true)
      if ((code == 0)) && [[ -n ${row_times[r]} ]]; then
        ms=$(awk "${row_times[r]}" "$out" | awk 'NR == 1 { printf "%.3f", $1 * 1000 }')
        [[ -n $ms ]] || { echo "bench.sh: $row under ${names[a]}: no time in its output" >&2; code=98; }
      fi
      if ((code == 0 && row_stats[r])); then
        if [[ -s $stats ]]; then
          sed "s/^/$row ${names[a]} $round /" "$stats" >>"$work/latency.txt"
        else
          echo "bench.sh: $row under ${names[a]}: no statistics in $stats" >&2
          code=97
        fi
      fi
      if ((code == 0)); then
        if [[ -z ${reference[$row]+set} ]]; then
          reference[$row]=$output
        elif [[ $output != "${reference[$row]}" ]]; then
          echo "bench.sh: $row under ${names[a]}: output differs from the other allocators':" >&2
          printf '%s\n' "$output" | head -5 >&2
          code=99
        fi
      fi
      if ((code != 0)); then
        echo "bench.sh: $row under ${names[a]} failed (exit $code):" >&2
        tail -5 "$out" >&2
        failures=$((failures + 1))
      fi
      echo "$round,$row,${names[a]},$ms,$kb,$code" >>"$raw"
      done_runs=$((done_runs + 1))
    done
  done
  echo "round $round/$rounds done ($done_runs/$total runs, $((SECONDS - started)) s)" >&2
done

# --- the report ----------------------------------------------------------------------------
allocator_list=$(IFS=,; echo "${names[*]}")
touch "$work/latency.txt"
"$bin_dir/bench-report" "$raw" "$allocator_list" "$work/tables.md" "$work/time.dat" \
  "$work/rss.dat" "$work/latency.txt" "$work/ccdf.dat"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(nproc)
versions=""
for package in libc6 libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4; do
  version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || echo "not installed")
  versions+="$package $version, "
done
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain -- src include 2>/dev/null | head -1 || true)
{
  echo "## Allocator comparison ($mode)"
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- Machine: $cpu, $cores cores ($(uname -sr)); shared, so expect noise"
  echo "- poolalloc: $commit${dirty:+ (src/ or include/ modified)}; ${versions%, }"
  echo "- $rounds interleaved round(s), starting allocator rotated per round; medians per cell."
  if ((${#exact_rss[@]})); then
    echo "  Wall time: clock_gettime around fork/exec/wait, under ptrace. Peak RSS: VmHWM at each"
    echo "  process's exit, exact (for g++, the largest of the driver, cc1plus and as)."
  else
    echo "  Wall time: clock_gettime around fork/exec/wait. Peak RSS: getrusage(RUSAGE_CHILDREN)"
    echo "  ru_maxrss (for g++, the largest of the driver, cc1plus and as)."
  fi
  echo "- Ratio columns: allocator / poolalloc (above 1: poolalloc is faster or smaller)."
  echo "- Scaling rows (mixed-tN, larson-tN) have fixed work per thread: on $cores cores the"
  echo "  ideal time is flat up to $cores threads and grows linearly beyond."
  if [[ -n $mbench ]]; then
    mbench_version=$(git -C "$mbench" rev-parse --short HEAD 2>/dev/null || echo "version unknown")
    echo "- mimalloc-bench rows ($mbench_version), P = 2 threads. larsonN, rptestN, xmalloc-testN"
    echo "  and glibc-thread run for a fixed time: their time is derived from their rate, as"
    echo "  mimalloc-bench reports it."
  fi
  if [[ -s $work/latency.txt ]]; then
    echo "- Latency: every malloc, realloc and free of the latency workload timed with the"
    echo "  time-stamp counter (histogram buckets 1.6 % wide, the counter's own cost subtracted);"
    echo "  a frame's figure is the sum of its calls' times on the game thread. Each figure is the"
    echo "  median over the rounds; latency.png: the fraction of calls that took at least t, all"
    echo "  rounds pooled. Worst cases on a shared machine include preemption."
  fi
  echo "- Workloads: see bench/README.md. Raw runs: raw.csv."
  echo
  cat "$work/tables.md"
} >"$results/results.md"
if command -v gnuplot >/dev/null; then
  gnuplot -e "timedat='$work/time.dat'; rssdat='$work/rss.dat'; out='$results/bench.png'; \
    ncols=$((n + 1)); subtitle='$mode, $cpu, $cores cores, $(date -u +%Y-%m-%d)'" \
    "$root/scripts/bench-chart.gnuplot"
  if [[ -s $work/ccdf.dat ]]; then
    gnuplot -e "ccdf='$work/ccdf.dat'; out='$results/latency.png'; \
      subtitle='$mode, $cpu, $cores cores, $(date -u +%Y-%m-%d)'" \
      "$root/scripts/latency-chart.gnuplot"
  fi
else
  echo "bench.sh: gnuplot not installed, no chart" >&2
fi
cat "$results/results.md"
echo "results in $results" >&2
if ((failures)); then
  echo "bench.sh: $failures run(s) failed" >&2
  exit 1
fi
