#!/usr/bin/env bash
# Installs, from Debian 12's packages, whatever poolalloc needs to build, test and benchmark
# that is not installed yet. Quiet and quick when everything is already there.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ clang libclang-rt-14-dev googletest libgtest-dev libbenchmark-dev
  # checks
  clang-format clang-tidy
  # the toolkit's tests for Windows: mingw-w64 (posix threads, for std::thread) and wine to run
  # them; GoogleTest built from the googletest package's sources
  g++-mingw-w64-x86-64-posix wine wine64
  # the debugging recipes of docs/debugging.md, run by a test; man --warnings on the man pages
  valgrind gdb man-db groff-base
  # install and package tests: pkg-config consumers, cpack -G DEB (dpkg-shlibdeps, file), the
  # fresh Debian root the package is installed in, lintian on the package
  pkg-config dpkg-dev file debootstrap lintian
  # the heap profile: libunwind (loaded when profiling is on; its -dev for a test program that
  # links it), go tool pprof to read the profiles and graphviz for its graphs
  golang-go graphviz libunwind-dev
  # the real programs the integration tests run under LD_PRELOAD
  python3 sqlite3 git xz-utils zstd redis-server redis-tools procps
)
if [[ "${1:-}" == "--bench" ]]; then
  # gawk and ruby: whole programs of bench.sh (ruby also mimalloc-bench's rbstress), z3 one of
  # mimalloc-bench's; the toolkit's anchors
  # (bench/toolkit_anchors.cpp): plf::colony, foonathan/memory, Boost.Pool
  packages+=(libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 gnuplot-nox time gawk ruby z3
    libplf-colony-dev libfoonathan-memory-dev libboost-dev)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
