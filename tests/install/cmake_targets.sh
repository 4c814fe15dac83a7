#!/usr/bin/env bash
# Programs built against an installed prefix with find_package(poolalloc) and its targets
# (tests/install/cmake_consumer) get poolalloc's malloc for the whole process, linked with
# poolalloc::poolalloc or poolalloc::poolalloc_debug under -Wl,--as-needed or with
# poolalloc::poolalloc_static, even when they never name malloc or free, in a C project as in
# a C and C++ one.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prefix=$scratch/prefix
install_into "$prefix"

# consume NAME [CMAKE_ARGS...]: configures, builds and runs the consumer project in NAME/.
consume() {
  local name=$1 program
  shift
  check "$name: the consumer project configures with find_package(poolalloc)" \
    cmake -S "$source/tests/install/cmake_consumer" -B "$name" -G Ninja \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
    -DPOOLALLOC_TESTS="$source/tests" "$@" &&
    check "$name: the consumer project builds" cmake --build "$name" || return 0
  for program in "$name"/strdup_only.* "$name"/new_only.*; do
    if [[ -x $program ]]; then
      check "$program runs on poolalloc's malloc" "$program" || true
    fi
  done
}
consume c-project
consume cxx-project -DPOOLALLOC_CONSUMER_CXX=ON
pa_expect "programs built and run: 3 in the C project, 5 in the C and C++ one" "3 5" \
  "$(find c-project -maxdepth 1 -type f -executable | wc -l) $(find cxx-project -maxdepth 1 -type f -executable | wc -l)"

# Before 1.0 only the same minor version is compatible: 0.1 and 1.0 are not found.
minor=${version%.*}
for wanted in "$minor" "$version" 0.1 1.0; do
  mkdir -p "find-$wanted"
  # shellcheck disable=SC2016 # a CMake variable
  printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(find LANGUAGES NONE)' \
    "find_package(poolalloc $wanted QUIET)" 'message(STATUS "found: ${poolalloc_FOUND}")' \
    >"find-$wanted/CMakeLists.txt"
  found=$(cmake -S "find-$wanted" -B "find-$wanted/build" -DCMAKE_PREFIX_PATH="$prefix" |
    sed -n 's/^-- found: //p')
  expected=0
  [[ $wanted != "$minor" && $wanted != "$version" ]] || expected=1
  pa_expect "find_package(poolalloc $wanted)" "$expected" "$([[ $found == 1 ]] && echo 1 || echo 0)"
done
finish
