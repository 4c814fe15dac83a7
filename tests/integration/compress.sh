#!/usr/bin/env bash
# A multithreaded compressor under poolalloc. Usage: compress.sh xz|zstd
# Compresses 24 MiB of generated data with two threads (-T2), checks the archive, decompresses
# it and compares checksums; then compresses a 4 MiB slice at a higher level. The compressor's
# stderr is collected apart, so that the statistics checked are its own, not sha256sum's.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tool=${1:?usage: compress.sh xz|zstd}
case $tool in
  xz) compress=(xz -T2 -1 --block-size=2MiB) strong=(xz -T2 -4 --block-size=1MiB) ;;
  zstd) compress=(zstd -q -T2 -3) strong=(zstd -q -T2 -12) ;;
  *) pa_die "unknown compressor: $tool" ;;
esac
pa_require "$tool" sha256sum head /usr/bin/python3
pa_setup

# The input is made once, on the system allocator, outside the working directory.
input=$PA_TEST_SCRATCH/input.dat
/usr/bin/python3 "$pa_data/make_input.py" 24 "$input"

workload() {
  local log=$PWD/$tool.err
  echo "input $(sha256sum <"$input")"
  "${compress[@]}" -c "$input" >archive 2>>"$log"
  echo "archive $(sha256sum <archive)"
  "$tool" -q -t archive 2>>"$log"
  echo "round trip $("$tool" -q -T2 -d -c archive 2>>"$log" | sha256sum)"
  head -c 4M "$input" >slice.in
  echo "slice input $(sha256sum <slice.in)"
  "${strong[@]}" -c slice.in >slice 2>>"$log"
  echo "slice $(sha256sum <slice)"
  echo "slice round trip $("$tool" -q -d -c slice 2>>"$log" | sha256sum)"
  cat "$log" >&2
}

pa_compare --stats-from "$tool.err" "$tool" 20 workload
pa_finish
