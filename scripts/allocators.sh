# shellcheck shell=bash
# Sourced by the scripts that compare allocators (bench.sh, fastpath-instructions.sh,
# rss-return.sh, rss-over-time.sh): what each allocator's entry preloads, and with which
# environment.
#
#   An entry is a name (glibc, jemalloc, mimalloc, tcmalloc, poolalloc), or NAME=WHAT[:VAR=VALUE]...
#   WHAT: a library, a name above, or several of either joined with '+', preloaded in that
#   order; each VAR=VALUE is set in the command's environment (bench.sh applies the settings; the
#   other scripts preload WHAT alone). For example:
#     before=OLD/libpoolalloc.so.0                      an older build of poolalloc
#     profile=poolalloc:POOLALLOC_PROFILE=1             poolalloc with the heap profile on
#     tagged=poolalloc+build-suite/bench/tools/libpush_tag.so   poolalloc and a shim after it
#
#   library_of ENTRY POOLALLOC_LIB   prints the libraries, ':'-separated (LD_PRELOAD's form):
#                                    nothing for glibc, Debian's packages for the peers
#                                    (scripts/install-deps.sh --bench), POOLALLOC_LIB for
#                                    poolalloc, a path as it is; fails for an unknown name
#   settings_of ENTRY                prints the VAR=VALUE settings, one a line
library_of() {
  local libdir=/usr/lib/x86_64-linux-gnu what=$1 item lib libraries=""
  [[ $what == ?*=?* ]] && what=${what#*=}
  what=${what%%:*}
  local IFS=+
  for item in $what; do
    case $item in
      glibc) lib="" ;;
      jemalloc) lib="$libdir/libjemalloc.so.2" ;;
      mimalloc) lib="$libdir/libmimalloc.so.2" ;;
      tcmalloc) lib="$libdir/libtcmalloc_minimal.so.4" ;;
      poolalloc) lib=$2 ;;
      */* | *.so*) [[ $1 == ?*=?* ]] && lib=$item ;;
      *) lib="" ;;
    esac
    if [[ -z $lib && $item != glibc ]]; then
      echo "${0##*/}: unknown allocator '$item' in '$1'" >&2
      return 1
    fi
    libraries+=${libraries:+:}$lib
  done
  echo "$libraries"
}
settings_of() {
  local what=$1
  [[ $what == ?*=*:* ]] || return 0
  what=${what#*=}
  tr ':' '\n' <<<"${what#*:}"
}
