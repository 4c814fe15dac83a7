#!/usr/bin/env bash
# Does RSS come down after a peak, whatever the program does next? Runs
# bench/workloads/rss_over_time under every allocator, at its default options, and prints the
# resident set at the peak and 0.5, 1, 2, 4 and 8 s after it as markdown tables:
# - a burst of --mib MiB of 64-byte blocks freed in random order, then fast-path-only traffic,
#   one call a second, frees only, or no call at all; in a single-threaded program, then in one
#   with a thread of its own that waits (--threads=2);
# - a thread pool of 16, 64 and 256 workers that each ran one job and wait, while the main
#   thread makes no call: large jobs (about 800 KiB of blocks of 16 B to 8 KiB, allocated then
#   freed), then small ones (50 blocks of 16 B to 4 KiB).
# --allocators takes NAME=LIB entries too, e.g. an older build of poolalloc (before=LIB).
#
#   scripts/rss-over-time.sh [--mib N] [--allocators LIST] [--workers LIST]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mib=256
allocators="glibc jemalloc mimalloc tcmalloc poolalloc"
workers="16 64 256"
while (($#)); do
  case $1 in
    --mib) mib=$2; shift ;;
    --allocators) allocators=${2//,/ }; shift ;;
    --workers) workers=${2//,/ }; shift ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done

build_dir="$root/build-suite"  # CMakePresets.json: preset suite
(cd "$root" && cmake --preset suite >/dev/null &&
  cmake --build --preset suite --target poolalloc workload_rss_over_time >/dev/null)

# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"

# One table: a row per allocator, the workload's arguments in "$@".
table() {
  echo "| allocator | peak | 0.5 s | 1 s | 2 s | 4 s | 8 s |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for allocator in $allocators; do
    library=$(library_of "$allocator" "$build_dir/src/libpoolalloc.so")
    [[ -z $library || -e $library ]] || continue
    read -r peak s1 s2 s3 s4 s5 < <(env -u LD_PRELOAD ${library:+LD_PRELOAD=$library} \
      "$build_dir/bench/workloads/rss_over_time" "$@")
    echo "| ${allocator%%=*} | $peak | $s1 | $s2 | $s3 | $s4 | $s5 |"
  done
  echo
}

echo "RSS in MiB after a peak, at each allocator's default options"
echo
for threads in 1 2; do
  program="a single-threaded program"
  ((threads == 1)) || program="a program with a thread of its own that waits"
  for after in fast one frees none; do
    echo "$mib MiB of 64-byte blocks freed in random order by $program, then: $after"
    echo
    table --pattern=burst --mib="$mib" --after="$after" --threads="$threads"
  done
done
for job in large small; do
  for count in $workers; do
    echo "$count workers, each ran one $job job and waits; the main thread makes no call"
    echo
    table --pattern=pool --workers="$count" --job="$job"
  done
done
