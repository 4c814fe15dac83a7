#!/usr/bin/env bash
# Runs malloc_fuzzer for PA_TEST_FUZZ_SECONDS (default 15) in one process per CPU (libFuzzer's
# fork mode: half a minute of fuzzing on two CPUs) over a copy of the committed seed corpus, so
# that what the fuzzer adds never lands in the source tree. A crash in any process ends the run
# with the crash's status, and its input is kept in the work directory's artifacts/.
#   run_fuzzer.sh <fuzzer> <seed corpus dir> <work dir> [libFuzzer options...]
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
shift 3
seconds=${PA_TEST_FUZZ_SECONDS:-15}
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
exec "$fuzzer" -fork="$(nproc)" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus"
