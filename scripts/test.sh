#!/usr/bin/env bash
# Runs every test, as CI does:
#   1. release build with g++: unit, stress and integration tests (real programs under LD_PRELOAD);
#   2. clang-format and clang-tidy find nothing (scripts/lint.sh);
#   3. clang build: the same code must compile warning-free, and the unit tests pass;
#   4. the toolkit and core tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   5. the thread-related tests under ThreadSanitizer;
#   6. the libFuzzer target of the malloc for POOLALLOC_FUZZ_SECONDS (default 60).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"

stage() { printf '\n== %s\n' "$*"; }
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

stage "libFuzzer: malloc_fuzzer for ${POOLALLOC_FUZZ_SECONDS:-60} s"
build fuzz
check fuzz
