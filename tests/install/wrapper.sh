#!/usr/bin/env bash
# The installed wrapper, bin/poolalloc: --version, --help listing every option the library
# reads, and programs run from any folder on the installed library, whether the libraries are
# in lib/, lib64/ or lib/<multiarch>/, and in a prefix whose path holds a space.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_into "$scratch/prefix"

status=0
"$scratch/prefix/bin/poolalloc" --help >help.out 2>help.err || status=$?
pa_expect "--help exits 0 and prints nothing on stderr" "0|0" "$status|$(wc -c <help.err)"
# Every POOLALLOC_* name the library knows, from its sources: a line "  NAME=DEFAULT  MEANING".
mapfile -t names < <(grep -ohE '"POOLALLOC_[A-Z_]+"' "$source"/src/*.cpp "$source"/src/*.hpp |
  tr -d '"' | sort -u)
pa_expect "the library's sources name its options" 1 $((${#names[@]} > 0))
for name in "${names[@]}"; do
  pa_expect "--help lists $name with its default and meaning" 1 \
    "$(grep -cE "^  $name=[^ ]* +[^ ]" help.out)"
done

# A program the wrapper runs must get the installed library: its malloc serves the program
# (poolalloc_owns, found in the process by ctypes, owns what libc's malloc returns).
owns_malloc='import ctypes
process = ctypes.CDLL(None)
process.malloc.restype = ctypes.c_void_p
process.poolalloc_owns.argtypes = [ctypes.c_void_p]
print(process.poolalloc_owns(process.malloc(100)))'

# try PREFIX LIBDIR: runs the wrapper installed in PREFIX, whose libraries are in PREFIX/LIBDIR,
# from another folder.
try() {
  local lib=$1/$2 wrapper=$1/bin/poolalloc
  pa_expect "$2: --version" "poolalloc $version" "$(cd / && "$wrapper" --version)"
  pa_expect "$2: --debug --version" "poolalloc $version" "$(cd / && "$wrapper" --debug --version)"
  # shellcheck disable=SC2016 # expanded by the inner shell
  pa_expect "$2: it preloads the installed soname, an LD_PRELOAD already set after it" \
    "$lib/libpoolalloc.so.$major:/nonexistent/other.so" \
    "$(cd / && LD_PRELOAD=/nonexistent/other.so "$wrapper" sh -c 'printf %s "$LD_PRELOAD"' \
      2>/dev/null)"
  # shellcheck disable=SC2016
  pa_expect "$2: the installed library, whatever POOLALLOC_BUILD_DIR says" \
    "$lib/libpoolalloc.so.$major" \
    "$(cd / && POOLALLOC_BUILD_DIR=/nonexistent/build "$wrapper" sh -c 'printf %s "$LD_PRELOAD"')"
  pa_expect "$2: python3 run from / allocates from the installed library" 1 \
    "$(cd / && "$wrapper" python3 -c "$owns_malloc")"
  pa_expect "$2: the same on the debug build" 1 \
    "$(cd / && "$wrapper" --debug python3 -c "$owns_malloc")"
}
try "$scratch/prefix" "$libdir"

# The same tree with its libraries moved to lib64/ and lib/x86_64-linux-gnu/, as
# CMAKE_INSTALL_LIBDIR puts them on other systems, copied with their links resolved (no file
# name tells the version any more).
for other in lib64 lib/x86_64-linux-gnu; do
  moved=$scratch/moved-${other//\//-}
  mkdir -p "$moved/$(dirname "$other")"
  cp -a "$scratch/prefix/bin" "$moved/"
  cp -rL "$scratch/prefix/$libdir" "$moved/$other.tmp"
  mv "$moved/$other.tmp" "$moved/$other"
  try "$moved" "$other"
done

# A prefix with a space: LD_PRELOAD cannot hold the path, the wrapper goes by LD_LIBRARY_PATH.
spaced="$scratch/with space"
install_into "$spaced"
pa_expect "a prefix with a space: python3 allocates from the installed library" 1 \
  "$(cd / && "$spaced/bin/poolalloc" python3 -c "$owns_malloc")"
pa_expect "a prefix with a space: --version (the library says it)" "poolalloc $version" \
  "$(cd / && "$spaced/bin/poolalloc" --version)"

# --stats-file and --verbose set the library's options; a relative file is made absolute.
# shellcheck disable=SC2016
pa_expect "--stats-file out.%p --verbose set POOLALLOC_STATS_FILE and POOLALLOC_VERBOSE" \
  "$scratch/out.%p|1" \
  "$("$scratch/prefix/bin/poolalloc" --stats-file out.%p --verbose \
    sh -c 'printf "%s|%s" "$POOLALLOC_STATS_FILE" "$POOLALLOC_VERBOSE"' 2>/dev/null)"
status=0
"$scratch/prefix/bin/poolalloc" --stats-file >/dev/null 2>missing.err || status=$?
pa_expect "--stats-file without a path: status 2" 2 "$status"
finish
