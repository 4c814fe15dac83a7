#!/usr/bin/env bash
# compare.sh PLAIN POOLALLOC WORK_DIR: runs a program built without poolalloc (PLAIN) and the same
# objects linked with libpoolalloc.a (POOLALLOC) under wine (WINEPREFIX from the environment),
# headless, at the default options but POOLALLOC_STATS=1: both must exit alike and print the same
# (test times left out), and the statistics must show that the pools served the program's news.
set -euo pipefail
plain=$1 pooled=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
# Four rounds of its 433 tests (GoogleTest 1.12): about 90,000 news.
flags=(--gtest_print_time=0 --gtest_color=no --gtest_repeat=4)
plain_status=0 pooled_status=0
wine "$plain" "${flags[@]}" >plain.out 2>plain.err || plain_status=$?
POOLALLOC_STATS=1 wine "$pooled" "${flags[@]}" >pooled.out 2>pooled.err || pooled_status=$?
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
((plain_status == pooled_status)) ||
  fail "exit status $plain_status without poolalloc, $pooled_status with it"
tests=$(grep -c '^\[       OK \]' plain.out || true)  # in all rounds
((tests > 0)) || fail "the program without poolalloc passed no test"
diff plain.out pooled.out >output.diff || fail "the outputs differ: $work/output.diff"
requests=$(sed -n 's/^pooled requests: \([0-9]*\).*/\1/p' pooled.err)
forwarded=$(sed -n 's/^system-forwarded requests: \([0-9]*\).*/\1/p' pooled.err)
echo "$tests test runs passed in both; with poolalloc: ${requests:-no} pooled requests," \
  "${forwarded:-no} forwarded to the C runtime"
# Blocks above 32 KiB go to the C runtime's heap: the pools must serve nearly all the others.
[[ -n $requests && -n $forwarded ]] || fail "no statistics table on stderr: $work/pooled.err"
# About 50 pooled requests a test run: a floor of 10 leaves room for another GoogleTest.
((${requests:-0} >= 10 * tests)) || fail "fewer than 10 pooled requests a test run"
((${forwarded:-1} * 1000 < ${requests:-0})) || fail "more than one request in 1000 forwarded"
if ((failures)); then
  exit 1
fi
echo "identical output; the pools served the program's news"
