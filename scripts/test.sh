#!/usr/bin/env bash
# Runs every test, as CI does:
#   1. release build with g++: unit, stress and integration tests (real programs under LD_PRELOAD);
#   2. clang-format and clang-tidy find nothing (scripts/lint.sh);
#   3. clang build: the same code must compile warning-free, and the unit tests pass;
#   4. the toolkit and core tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   5. the thread-related tests under ThreadSanitizer;
#   6. the libFuzzer target of the malloc for PA_TEST_FUZZ_SECONDS (default 15) on every CPU;
#   7. the toolkit's tests, the core's unit tests and libpoolalloc.a's Windows tests (operators,
#      64 threads, every kind of Windows thread, libstdc++ linked both ways, a game built against
#      the installed prefix, GoogleTest's own unit test linked with and without poolalloc) built
#      with mingw-w64 and run under wine;
#   8. the Debian package (cpack -G DEB) installed with apt-get in a fresh Debian 12 root, where
#      poolalloc --stats runs python3. debootstrap builds that root (build/debian-root, kept for
#      later runs) in the background from the start, so that its download overlaps the builds.
# Every stage ends with the seconds it took.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"

mkdir -p "$root/build"
debian_log=$root/build/debian-root.log
"$root/tests/package/debian_root.sh" "$root/build/debian-root" >"$debian_log" 2>&1 &
debian_root=$!
# When a stage fails, the root's build, if still running, stops (and removes what it had made).
# shellcheck disable=SC2046 # a list of process ids
trap 'if [[ -n $(jobs -pr) ]]; then kill $(jobs -pr); wait; fi' EXIT

started=$SECONDS
stage_name=""
stage_started=$SECONDS
stage_done() {
  if [[ -n $stage_name ]]; then
    printf '== %s: %d s\n' "$stage_name" $((SECONDS - stage_started))
  fi
}
stage() {
  stage_done
  stage_name=$*
  stage_started=$SECONDS
  printf '\n== %s\n' "$*"
}
# build PRESET, check PRESET: configure and build, or run the tests, as CMakePresets.json says.
build() { (cd "$root" && cmake --preset "$1" >/dev/null && cmake --build --preset "$1"); }
check() { (cd "$root" && ctest --preset "$1"); }

stage "g++ release build: all tests"
build default
check default

stage "clang-format and clang-tidy"
"$root/scripts/lint.sh" "$root/build"

stage "clang build: unit tests"
build clang
check clang

stage "AddressSanitizer + UndefinedBehaviorSanitizer: toolkit and core"
build asan
check asan

stage "ThreadSanitizer: thread-related tests"
build tsan
check tsan

stage "libFuzzer: malloc_fuzzer for ${PA_TEST_FUZZ_SECONDS:-15} s on every CPU"
build fuzz
check fuzz

stage "mingw-w64 + wine: toolkit, core and Windows tests"
build mingw
check mingw
# The wine session that the tests shared (cmake/run-under-wine.sh) ends now, not 60 s later.
WINEPREFIX=$root/build-mingw/wine wineserver -k || true

stage "Debian package: apt-get install in a fresh Debian 12 root, poolalloc --stats python3"
status=0
wait "$debian_root" || status=$?
if ((status != 0)); then
  cat "$debian_log"
  echo "test.sh: building the Debian root failed, as logged above" >&2
  exit 1
fi
grep '^debian_root:' "$debian_log" || echo "Debian root: built by an earlier run"
check package
stage_done
printf '== all stages: %d s\n' $((SECONDS - started))
