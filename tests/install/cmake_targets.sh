#!/usr/bin/env bash
# Programs built against an installed prefix with find_package(poolalloc) and its targets
# (tests/install/cmake_consumer) get poolalloc's malloc for the whole process, linked with
# poolalloc::poolalloc or poolalloc::poolalloc_debug under -Wl,--as-needed or with
# poolalloc::poolalloc_static, even when they never name malloc or free.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prefix=$scratch/prefix
install_into "$prefix"

if check "the consumer project configures with find_package(poolalloc)" \
  cmake -S "$source/tests/install/cmake_consumer" -B consumer -G Ninja \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DPOOLALLOC_TESTS="$source/tests" &&
  check "the consumer project builds" cmake --build consumer; then
  for program in strdup_only.poolalloc strdup_only.poolalloc_debug new_only.poolalloc \
    new_only.poolalloc_static; do
    check "$program runs on poolalloc's malloc" "consumer/$program" || true
  done
fi
finish
