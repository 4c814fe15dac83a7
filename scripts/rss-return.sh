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

# shellcheck source=scripts/allocators.sh
source "$root/scripts/allocators.sh"

echo "RSS in MiB, $mib MiB allocated in blocks of 64 B to 1 KiB, then all freed"
echo
echo "| allocator | before | peak | after free | after malloc_trim(0) |"
echo "|---|---:|---:|---:|---:|"
for allocator in $allocators; do
  library=$(library_of "$allocator" "$build_dir/src/libpoolalloc.so")
  [[ -z $library || -e $library ]] || continue
  read -r before peak after trimmed < <(LD_PRELOAD=$library \
    "$build_dir/bench/workloads/rss_return" --mib="$mib")
  echo "| $allocator | $before | $peak | $after | $trimmed |"
done
