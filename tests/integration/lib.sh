# shellcheck shell=bash
# The integration-test harness, sourced by every tests/integration/*.sh script (and, for its
# checks pa_expect and pa_fail, by the install and package tests).
#
# A test runs a real program (or a small workload around one) three times:
#   system    on the system allocator (no LD_PRELOAD);
#   poolalloc with LD_PRELOAD=$PA_TEST_LIB;
#   stats     with LD_PRELOAD=$PA_TEST_LIB and POOLALLOC_STATS=1.
# The first two must agree byte for byte on stdout, stderr and exit status. The third must
# agree on stdout and exit status, and its `pooled requests: N` line(s) must show that the
# pools really served the program.
#
# Environment (CMake sets the first two):
# (PA_TEST_*, not POOLALLOC_*: the library reports a POOLALLOC_* variable it does not know.)
#   PA_TEST_LIB      the library to preload (an absolute path)
#   PA_TEST_SCRATCH  a scratch directory of this test's own; emptied at the start (only if
#                    it is empty or was made by these tests)
#   PA_TEST_REQUIRE_STATS=0  accept a library that prints no statistics: only for
#                    developing the harness with a stand-in allocator (e.g. jemalloc)

pa_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # for the test scripts
pa_data=$pa_dir/data
pa_failures=0

pa_log() { printf '%s\n' "$*"; }
pa_fail() {
  printf 'FAIL: %s\n' "$*"
  pa_failures=$((pa_failures + 1))
}
# pa_expect WHAT EXPECTED ACTUAL: a check that ACTUAL is EXPECTED.
pa_expect() {
  if [[ "$2" == "$3" ]]; then
    pa_log "ok: $1"
  else
    pa_fail "$1: expected [$2], got [$3]"
  fi
}
pa_die() {
  printf 'ERROR: %s\n' "$*"
  exit 1
}

# pa_require PROGRAM...: skips the test (ctest's SKIP_RETURN_CODE 77) when one is missing.
pa_require() {
  local program
  for program; do
    if ! command -v "$program" >/dev/null; then
      printf 'SKIP: %s is not installed (scripts/install-deps.sh installs it)\n' "$program"
      exit 77
    fi
  done
}

# pa_setup: checks the environment and empties the scratch directory.
pa_setup() {
  [[ -n "${PA_TEST_LIB:-}" ]] || pa_die "PA_TEST_LIB is not set (the library to preload)"
  [[ -n "${PA_TEST_SCRATCH:-}" ]] || pa_die "PA_TEST_SCRATCH is not set (a scratch directory)"
  [[ "$PA_TEST_LIB" == /* ]] || pa_die "PA_TEST_LIB must be an absolute path: $PA_TEST_LIB"
  [[ "$PA_TEST_LIB" != *[[:space:]:]* ]] ||
    pa_die "LD_PRELOAD cannot hold a path with spaces or colons: $PA_TEST_LIB"
  [[ -f "$PA_TEST_LIB" ]] || pa_die "no library at PA_TEST_LIB=$PA_TEST_LIB (not built?)"
  [[ "$PA_TEST_SCRATCH" == /* ]] || pa_die "PA_TEST_SCRATCH must be an absolute path"
  # Emptied only if it is one of ours (it holds the marker) or already empty: a mistyped
  # PA_TEST_SCRATCH must not cost anyone a directory.
  local marker=$PA_TEST_SCRATCH/.poolalloc-scratch
  if [[ -d "$PA_TEST_SCRATCH" && ! -f "$marker" && -n "$(ls -A "$PA_TEST_SCRATCH")" ]]; then
    pa_die "PA_TEST_SCRATCH=$PA_TEST_SCRATCH is not empty and not a scratch directory of these tests"
  fi
  rm -rf "$PA_TEST_SCRATCH"
  mkdir -p "$PA_TEST_SCRATCH"
  : >"$marker"
  # The baseline must really be the system allocator, and stderr must carry no statistics.
  unset LD_PRELOAD POOLALLOC_STATS
  # The preloaded library itself must load: a clear message here beats three odd diffs.
  local err
  if ! err=$(LD_PRELOAD=$PA_TEST_LIB /bin/true 2>&1) || [[ -n "$err" ]]; then
    pa_die "preloading $PA_TEST_LIB into /bin/true fails or prints: $err"
  fi
}

# pa_show_diff LABEL FILE_A FILE_B: prints how two captured streams differ.
pa_show_diff() {
  local label=$1 a=$2 b=$3 max_lines=60 lines
  printf -- '--- %s: system allocator (-) vs poolalloc (+); all of it in\n    %s\n    %s\n' \
    "$label" "$a" "$b"
  diff -u --label "system/$label" --label "poolalloc/$label" "$a" "$b" >"$b.diff" || true
  head -n "$max_lines" "$b.diff"
  lines=$(wc -l <"$b.diff")
  ((lines <= max_lines)) || printf -- '--- ... %s diff lines in all: %s\n' "$lines" "$b.diff"
  if grep -q '^Binary files' "$b.diff"; then cmp "$a" "$b" || true; fi
}

# pa_max_pooled FILE: prints the largest N of the `pooled requests: N` lines in FILE (one per
# process that printed statistics), or nothing when there is none.
pa_max_pooled() {
  sed -n 's/^pooled requests: \([0-9][0-9]*\)$/\1/p' "$1" | sort -n | tail -n 1
}

# pa_compare [--stats-from FILE] NAME MIN_POOLED COMMAND [ARGS...]
#
# Runs COMMAND (a program or a shell function of the test script) three times as described at
# the top, each time in a fresh, empty working directory at the same path ($PA_TEST_SCRATCH/
# work, so paths in the output agree), with stdin from /dev/null. Functions run in a subshell
# with `set -euo pipefail`; LD_PRELOAD is exported there, so every program they start runs on
# the allocator under test. The system run must exit with status 0: a workload that wants to
# compare an error path checks for the failure itself and prints the status.
#
# The statistics check takes the largest N over all `pooled requests: N` lines on the stats
# run's stderr (each process prints its own table), or over those in FILE (relative to the
# working directory) with --stats-from, for a program whose stderr the workload redirects.
# It requires N >= MIN_POOLED.
pa_compare() {
  local stats_from=""
  if [[ $1 == --stats-from ]]; then
    stats_from=$2
    shift 2
  fi
  local name=$1 min_pooled=$2
  shift 2
  local work=$PA_TEST_SCRATCH/work out=$PA_TEST_SCRATCH/$name
  local variant start rc elapsed timings=""
  local -A rcs
  for variant in system poolalloc stats; do
    rm -rf "$work"
    mkdir -p "$work"
    start=${EPOCHREALTIME/[.,]/}
    set +e
    (
      set -euo pipefail
      cd "$work"
      if [[ $variant != system ]]; then export LD_PRELOAD=$PA_TEST_LIB; fi
      if [[ $variant == stats ]]; then export POOLALLOC_STATS=1; fi
      "$@"
    ) >"$out.$variant.out" 2>"$out.$variant.err" </dev/null
    rc=$?
    set -e
    rcs[$variant]=$rc
    printf '%s\n' "$rc" >"$out.$variant.status"
    elapsed=$((${EPOCHREALTIME/[.,]/} - start))
    timings+=$(printf ' %s %d.%ds' "$variant" $((elapsed / 1000000)) $((elapsed / 100000 % 10)))
    if [[ $variant == stats && -n $stats_from ]]; then
      cp "$work/$stats_from" "$out.stats.from" 2>/dev/null || : >"$out.stats.from"
    fi
  done
  pa_log "$name:$timings"

  local failures_before=$pa_failures how
  if [[ ${rcs[system]} != 0 ]]; then
    pa_fail "$name: the system-allocator run itself exited with ${rcs[system]}:"
    tail -n 20 "$out.system.err"
  fi
  for variant in poolalloc stats; do
    how="under poolalloc"
    [[ $variant == poolalloc ]] || how="with POOLALLOC_STATS=1"
    if [[ ${rcs[$variant]} != "${rcs[system]}" ]]; then
      pa_fail "$name: exit status ${rcs[$variant]} $how, ${rcs[system]} on the system allocator"
      tail -n 20 "$out.$variant.err"
    fi
    if ! cmp -s "$out.system.out" "$out.$variant.out"; then
      pa_fail "$name: stdout differs $how"
      pa_show_diff stdout "$out.system.out" "$out.$variant.out"
    fi
  done
  # Only without POOLALLOC_STATS: with it, stderr carries the statistics tables.
  if ! cmp -s "$out.system.err" "$out.poolalloc.err"; then
    pa_fail "$name: stderr differs under poolalloc (without POOLALLOC_STATS it must print nothing)"
    pa_show_diff stderr "$out.system.err" "$out.poolalloc.err"
  fi

  local source=$out.stats.err pooled
  [[ -z $stats_from ]] || source=$out.stats.from
  pooled=$(pa_max_pooled "$source")
  if [[ -z $pooled ]]; then
    if [[ ${PA_TEST_REQUIRE_STATS:-1} == 0 ]]; then
      pa_log "$name: no 'pooled requests: N' line (PA_TEST_REQUIRE_STATS=0: not checked)"
    else
      pa_fail "$name: no 'pooled requests: N' line with POOLALLOC_STATS=1 in ${source##*/}; its tail:"
      tail -n 20 "$source"
      pa_log "(Some programs, xz and coreutils among them, close stderr before they exit: the" \
        "statistics must go to a copy of fd 2 taken at start-up.)"
    fi
  elif ((pooled < min_pooled)); then
    pa_fail "$name: pooled requests: $pooled, expected at least $min_pooled (did the pools serve it?)"
  else
    pa_log "$name: pooled requests: $pooled (at least $min_pooled required)"
  fi
  if ((pa_failures == failures_before)); then
    pa_log "$name: ok (outputs in $out.*)"
  fi
}

# pa_finish: the test's exit status.
pa_finish() {
  if ((pa_failures)); then
    pa_log "$pa_failures check(s) failed"
    exit 1
  fi
  exit 0
}
