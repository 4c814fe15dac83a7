# shellcheck shell=bash
# Sourced by the install tests, which CMake runs as
#   <test>.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR VERSION LIBDIR CC CXX
# (the build tree, the source tree, a scratch folder of the test's own, the project version,
# CMAKE_INSTALL_LIBDIR and the compilers). Each test installs the build into a fresh prefix
# with cmake --install and checks what it got.
set -euo pipefail
if (($# != 7)); then
  echo "usage: $0 BUILD_DIR SOURCE_DIR SCRATCH_DIR VERSION LIBDIR CC CXX" >&2
  exit 2
fi
# shellcheck source=../integration/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"  # pa_expect, pa_fail
# shellcheck disable=SC2034 # for the test scripts
build=$1 source=$2 scratch=$3 version=$4 libdir=$5 cc=$6 cxx=$7
# shellcheck disable=SC2034
major=${version%%.*}

# Nothing from the caller's environment may choose the library or the pkg-config files.
unset LD_PRELOAD LD_LIBRARY_PATH POOLALLOC_BUILD_DIR PKG_CONFIG_PATH

# The scratch folder is emptied: only one inside the build tree.
[[ $scratch == "$build"/?* ]] || {
  echo "ERROR: the scratch folder $scratch is not inside the build tree $build" >&2
  exit 2
}
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch"


# install_into PREFIX: cmake --install of the build tree into PREFIX, which must not exist.
install_into() {
  [[ ! -e "$1" ]] || { echo "ERROR: $1 exists" >&2; exit 2; }
  if ! cmake --install "$build" --prefix "$1" >"$1.log" 2>&1; then
    cat "$1.log"
    echo "ERROR: cmake --install $build --prefix $1 failed" >&2
    exit 1
  fi
}

# check WHAT COMMAND...: runs COMMAND; when it fails, prints its output and counts a failure.
# Returns COMMAND's status (callers test it: set -e does not stop there).
check() {
  local what=$1 output status=0
  shift
  output=$("$@" 2>&1) || status=$?
  if ((status == 0)); then
    printf 'ok: %s\n' "$what"
  else
    pa_fail "$what: exit status $status from: $*"
    printf '%s\n' "$output"
  fi
  return "$status"
}

finish() {
  if ((pa_failures)); then
    printf '%d check(s) failed\n' "$pa_failures"
    exit 1
  fi
  echo "all checks passed"
}
