#!/usr/bin/env bash
# Runs every test, as CI does:
#   1. release build with g++: unit, stress and integration tests (real programs under LD_PRELOAD);
#   2. clang-format and clang-tidy find nothing (scripts/lint.sh);
#   3. clang build: the same code must compile warning-free, and the unit tests pass;
#   4. the toolkit and core tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   5. the thread-related tests under ThreadSanitizer;
#   6. the libFuzzer target of the malloc for PA_TEST_FUZZ_SECONDS (default 60).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"

stage() { printf '\n== %s\n' "$*"; }
build() {
  local dir=$1
  shift
  cmake -S "$root" -B "$root/$dir" -G Ninja "$@" >/dev/null
  cmake --build "$root/$dir"
}
check() { ctest --test-dir "$root/$1" --output-on-failure -j2 "${@:2}"; }

stage "g++ release build: all tests"
build build
check build

stage "clang-format and clang-tidy"
"$root/scripts/lint.sh" "$root/build"

stage "clang build: unit tests"
build build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPOOLALLOC_BUILD_BENCH=OFF
check build-clang -LE integration

stage "AddressSanitizer + UndefinedBehaviorSanitizer: toolkit and core"
build build-asan -DCMAKE_BUILD_TYPE=Debug -DPOOLALLOC_SANITIZE=address
check build-asan

stage "ThreadSanitizer: thread-related tests"
build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOOLALLOC_SANITIZE=thread
check build-tsan -L threads

stage "libFuzzer: malloc_fuzzer for ${PA_TEST_FUZZ_SECONDS:-60} s"
cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DPOOLALLOC_BUILD_BENCH=OFF -DPOOLALLOC_FUZZ=ON >/dev/null
cmake --build "$root/build-fuzz" --target malloc_fuzzer
check build-fuzz -L fuzz
