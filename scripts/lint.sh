#!/usr/bin/env bash
# Formatting and static checks: clang-format must leave every source as it is, and clang-tidy
# (.clang-tidy) must find nothing in the allocator or in the toolkit headers.
#   scripts/lint.sh [BUILD_DIR]   (a configured build with compile_commands.json; default build,
#                                 configured with CMake preset "default" if it is not yet)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
cd "$root"
if (($# == 0)) && [[ ! -f $build/compile_commands.json ]]; then
  cmake --preset default >/dev/null
fi

# tests/integration/data and bench/programs hold programs that g++ compiles as input.
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' ':!:tests/integration/data/*' \
  ':!:bench/programs/*')
clang-format --dry-run --Werror "${sources[@]}"

# Every finding of clang-tidy on the allocator's sources, and on the toolkit's headers as the
# toolkit tests include them all (the findings in the tests themselves are not counted).
# clang 14's static analyzer crashes on exports.cpp and exports_poolalloc.cpp, which define
# malloc, calloc and free (under their names or poolalloc's), and takes minutes over the toolkit
# tests' death tests: it follows the toolkit's paths from the particle-system example instead,
# which uses every part of it. Any other crash of clang-tidy fails the lint: a file it did not
# finish was not checked.
crashes=$(mktemp)
trap 'rm -f "$crashes"' EXIT
tidy() {
  local status=0
  clang-tidy -p "$build" --quiet "$@" 2>/dev/null || status=$?
  if ((status > 1)); then echo "clang-tidy $*: exit status $status" >>"$crashes"; fi
}
export -f tidy
export build crashes
findings=$(
  {
    # The sources of this build alone: the Windows build's (src/os_windows.cpp...) are not in a
    # Linux build's compile_commands.json, and would be read with a neighbour's flags.
    for source in src/*.cpp; do
      if grep -qF "\"$root/$source\"" "$build/compile_commands.json"; then echo "$source"; fi
    done | xargs -P "$(nproc)" -I{} bash -c 'case {} in
      src/exports.cpp | src/exports_poolalloc.cpp) tidy --checks=-clang-analyzer-* {} ;;
      *) tidy {} ;;
    esac'
    {
      printf '%s\n' tests/toolkit/*_test.cpp |
        xargs -P "$(nproc)" -I{} bash -c "tidy --checks=-clang-analyzer-* \
          --header-filter=include/poolalloc/ {}"
      tidy --header-filter=include/poolalloc/ bench/particles.cpp
    } | grep 'include/poolalloc/' || true
  } | grep 'warning:' | sort -u || true
)
if [[ -n $findings || -s $crashes ]]; then
  echo "$findings"
  cat "$crashes"
  exit 1
fi
echo "lint: clean"
