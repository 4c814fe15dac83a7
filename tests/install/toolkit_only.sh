#!/usr/bin/env bash
# A toolkit-only build (POOLALLOC_BUILD_MALLOC=OFF) installs the toolkit alone: its headers
# without the malloc's C API (poolalloc.h), its CMake and pkg-config files, poolalloc(3) without
# the wrapper's poolalloc(1), and the docs; a toolkit program builds against it with pkg-config.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tree=$scratch/build
check "a toolkit-only build configures" cmake -S "$source" -B "$tree" -G Ninja \
  -DCMAKE_CXX_COMPILER="$cxx" -DPOOLALLOC_BUILD_MALLOC=OFF -DPOOLALLOC_BUILD_TESTS=OFF \
  -DPOOLALLOC_BUILD_BENCH=OFF || finish
build=$tree
prefix=$scratch/prefix
install_into "$prefix"

{
  (cd "$source" && find include/poolalloc -type f ! -name poolalloc.h)
  for file in poolallocConfig.cmake poolallocConfigVersion.cmake poolallocTargets.cmake \
    poolalloc_link_feature.cmake; do
    echo "$libdir/cmake/poolalloc/$file"
  done
  echo "$libdir/pkgconfig/poolalloc-toolkit.pc"
  echo share/man/man3/poolalloc.3
  echo share/doc/poolalloc/LICENSE
  echo share/doc/poolalloc/README.md
} | sort >expected
(cd "$prefix" && find . -type f -o -type l) | sed 's|^\./||' | sort >installed
if diff expected installed >layout.diff; then
  echo "ok: the toolkit-only tree (expected - installed: none)"
else
  pa_fail "the toolkit-only tree differs (expected -, installed +):"
  cat layout.diff
fi

# shellcheck disable=SC2046 # pkg-config's output is a list of flags
if check "the toolkit's consumer builds with the installed poolalloc-toolkit.pc" \
  "$cxx" -std=c++20 "$source/tests/toolkit/consumer/main.cpp" \
  $(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs poolalloc-toolkit) \
  -o toolkit_consumer; then
  check "toolkit_consumer runs" ./toolkit_consumer || true
fi
finish
