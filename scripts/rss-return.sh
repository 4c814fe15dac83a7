#!/usr/bin/env bash
# Does RSS follow the live set? Runs bench/workloads/rss_return (allocate --mib MiB in blocks
# of 64 B to 1 KiB, free them all, then malloc_trim(0)) under every allocator and prints the
# resident set at each step as a markdown table.
#
#   scripts/rss-return.sh [--mib N] [--allocators LIST]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mib=1024
allocators="glibc jemalloc mimalloc tcmalloc poolalloc"
while (($#)); do
  case $1 in
    --mib) mib=$2; shift ;;
    --allocators) allocators=${2//,/ }; shift ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done

build_dir="$root/build-suite"  # CMakePresets.json: preset suite
(cd "$root" && cmake --preset suite >/dev/null &&
  cmake --build --preset suite --target poolalloc workload_rss_return >/dev/null)

libdir=/usr/lib/x86_64-linux-gnu
declare -A libraries=(
  [glibc]="" [jemalloc]="$libdir/libjemalloc.so.2" [mimalloc]="$libdir/libmimalloc.so.2"
  [tcmalloc]="$libdir/libtcmalloc_minimal.so.4" [poolalloc]="$build_dir/src/libpoolalloc.so")

echo "RSS in MiB, $mib MiB allocated in blocks of 64 B to 1 KiB, then all freed"
echo
echo "| allocator | before | peak | after free | after malloc_trim(0) |"
echo "|---|---:|---:|---:|---:|"
for allocator in $allocators; do
  library=${libraries[$allocator]?unknown allocator $allocator}
  [[ -z $library || -e $library ]] || continue
  read -r before peak after trimmed < <(LD_PRELOAD=$library \
    "$build_dir/bench/workloads/rss_return" --mib="$mib")
  echo "| $allocator | $before | $peak | $after | $trimmed |"
done
