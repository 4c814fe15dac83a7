# shellcheck shell=bash
# Sourced by the scripts that compare allocators (bench.sh, fastpath-instructions.sh,
# rss-return.sh, rss-over-time.sh): the library that each allocator's name preloads.
#
#   library_of NAME POOLALLOC_LIB   prints it: nothing for glibc, Debian's packages for the
#                                   peers (scripts/install-deps.sh --bench), POOLALLOC_LIB for
#                                   poolalloc, LIB for NAME=LIB; fails for any other name
library_of() {
  local libdir=/usr/lib/x86_64-linux-gnu
  case $1 in
    glibc) echo "" ;;
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    mimalloc) echo "$libdir/libmimalloc.so.2" ;;
    tcmalloc) echo "$libdir/libtcmalloc_minimal.so.4" ;;
    poolalloc) echo "$2" ;;
    ?*=?*) echo "${1#*=}" ;;
    *) echo "${0##*/}: unknown allocator '$1'" >&2; return 1 ;;
  esac
}
