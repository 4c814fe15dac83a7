#!/usr/bin/env bash
# scripts/poolalloc, the wrapper: options, the library it preloads (the build tree's, given by
# POOLALLOC_BUILD_DIR, which must be the one CMake built as PA_TEST_LIB), an LD_PRELOAD kept
# after it, --stats, exit statuses, and a program's output unchanged through it.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pa_require sort seq
pa_setup
[[ -n "${POOLALLOC_BUILD_DIR:-}" ]] || pa_die "POOLALLOC_BUILD_DIR is not set (the build tree)"
wrapper=$(cd "$pa_dir/../.." && pwd)/scripts/poolalloc
cd "$PA_TEST_SCRATCH"

status=0
"$wrapper" --help >help.out 2>help.err || status=$?
pa_expect "--help exits 0" 0 "$status"
pa_expect "--help prints usage on stdout" \
  "usage: poolalloc [--stats] [--stats-file PATH] [--verbose] [--debug] [--version] [-h|--help] [--] CMD [ARGS...]" \
  "$(head -n 1 help.out)"

status=0
"$wrapper" >none.out 2>none.err || status=$?
pa_expect "no command: status 2" 2 "$status"
pa_expect "no command: usage on stderr only" "0 1" "$(wc -c <none.out) $(grep -c '^usage:' none.err)"

status=0
"$wrapper" --no-such-option true >bad.out 2>bad.err || status=$?
pa_expect "unknown option: status 2" 2 "$status"

status=0
"$wrapper" no-such-command-xyz >missing.out 2>missing.err || status=$?
pa_expect "missing command: status 127" 127 "$status"
pa_expect "missing command: message" "poolalloc: no-such-command-xyz: command not found" "$(cat missing.err)"
pa_expect "--version with POOLALLOC_STATS_FILE set: the version, and no statistics file" \
  "poolalloc $(sed -n 's/^#define POOLALLOC_VERSION_STRING "\(.*\)"$/\1/p' \
    "$pa_dir/../../include/poolalloc/poolalloc.h")|0" \
  "$(POOLALLOC_STATS_FILE="$PWD/version-stats" "$wrapper" --version)|$(find . -name 'version-stats*' | wc -l)"
status=0
"$wrapper" -h >short_help.out 2>&1 || status=$?
pa_expect "-h is --help" "0|same" "$status|$(cmp -s help.out short_help.out && echo same)"
printf 'echo not runnable\n' >not_executable.sh
for path in ./not_executable.sh "$PWD"; do
  status=0
  "$wrapper" "$path" >denied.out 2>denied.err || status=$?
  pa_expect "$path, there but not runnable: status 126 and why" \
    "126|poolalloc: $path: cannot run it (not executable, or a folder)" "$status|$(cat denied.err)"
done

# The build tree's soname link, libpoolalloc.so.0, to the library CMake built.
soname=$POOLALLOC_BUILD_DIR/src/libpoolalloc.so.0
pa_expect "the soname link is the library CMake built" "$(readlink -f "$PA_TEST_LIB")" \
  "$(readlink -f "$soname")"
# shellcheck disable=SC2016 # expanded by the inner shell
pa_expect "it preloads the soname link" "$soname|unset" \
  "$("$wrapper" sh -c 'printf "%s|%s" "$LD_PRELOAD" "${POOLALLOC_STATS-unset}"')"
# shellcheck disable=SC2016
pa_expect "an LD_PRELOAD already set comes after it" "$soname:/nonexistent/other.so" \
  "$(LD_PRELOAD=/nonexistent/other.so "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' 2>/dev/null)"
# shellcheck disable=SC2016
pa_expect "a poolalloc library already preloaded gives way to the wrapper's" \
  "$soname:/nonexistent/other.so" \
  "$(LD_PRELOAD="/x/libpoolalloc-debug.so.0 /nonexistent/other.so:/y/libpoolalloc.so.0" \
    "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' 2>/dev/null)"
# shellcheck disable=SC2016
pa_expect "--stats sets POOLALLOC_STATS=1" 1 \
  "$("$wrapper" --stats -- sh -c 'printf %s "$POOLALLOC_STATS"' 2>/dev/null)"

status=0
"$wrapper" sh -c 'echo out; echo err >&2; exit 3' >status.out 2>status.err || status=$?
pa_expect "the program's exit status comes back" 3 "$status"
pa_expect "the program's stdout and stderr pass unchanged" "out|err" "$(cat status.out)|$(cat status.err)"

seq 200000 -1 1 >numbers
sort -n numbers >sorted.system
"$wrapper" sort -n numbers >sorted.poolalloc 2>sorted.err
pa_expect "sort -n through the wrapper: same output, nothing on stderr" "same|0" \
  "$(cmp -s sorted.system sorted.poolalloc && echo same)|$(wc -c <sorted.err)"

# bash, not sort: coreutils close stderr before they exit.
# shellcheck disable=SC2016
"$wrapper" --stats bash -c 'a=(); for i in {1..1000}; do a+=("$i"); done' 2>stats.err
pooled=$(pa_max_pooled stats.err)
if [[ -n "$pooled" ]]; then
  pa_expect "--stats: bash prints 'pooled requests: N' with N > 0" 1 $((pooled > 0))
elif [[ ${PA_TEST_REQUIRE_STATS:-1} == 0 ]]; then
  pa_log "--stats: no statistics line (PA_TEST_REQUIRE_STATS=0: not checked)"
else
  pa_fail "--stats: no 'pooled requests: N' line from bash; its stderr: $(cat stats.err)"
fi
pa_finish
