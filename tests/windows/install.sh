#!/usr/bin/env bash
# The Windows build installed into a fresh prefix (cmake --install), and a game cross-built
# against it with find_package(poolalloc) (tests/windows/consumer) and with pkg-config, run
# under wine: its news are the pools'. Run by CMake as
#   install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR VERSION LIBDIR CC CXX
# with the mingw-w64 compilers, and WINEPREFIX in the environment. Programs run under wine as the
# mingw preset's tests do (cmake/run-under-wine.sh).
# shellcheck source=../install/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../install/lib.sh"
prefix=$scratch/prefix
install_into "$prefix"
for file in include/poolalloc/poolalloc.h "$libdir/libpoolalloc.a" "$libdir/libpoolalloc-debug.a" \
  "$libdir/cmake/poolalloc/poolallocConfig.cmake" "$libdir/pkgconfig/poolalloc.pc" \
  "$libdir/pkgconfig/poolalloc-debug.pc"; do
  pa_expect "installed: $file" 1 "$([[ -f $prefix/$file ]] && echo 1 || echo 0)"
done

# The toolchain file roots find_package's search in mingw-w64's own tree: poolalloc_DIR names
# the package, as a game's build names a prefix outside that tree.
if check "the consumer project configures with find_package(poolalloc)" \
  cmake -S "$source/tests/windows/consumer" -B consumer -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$source/cmake/mingw-w64.cmake" -DCMAKE_BUILD_TYPE=Release \
  -Dpoolalloc_DIR="$prefix/$libdir/cmake/poolalloc" -DPOOLALLOC_TESTS="$source/tests" &&
  check "the consumer project builds" cmake --build consumer; then
  for target in poolalloc_static poolalloc_debug_static; do
    check "game.$target runs under wine, its news served by the pools" \
      "$source/cmake/run-under-wine.sh" "consumer/game.$target.exe" || true
  done
fi

export PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig
pa_expect "pkg-config --modversion poolalloc" "$version" "$(pkg-config --modversion poolalloc)"
for module in poolalloc poolalloc-debug; do
  # shellcheck disable=SC2046 # pkg-config's output is a list of flags
  if check "$module: the game builds with pkg-config's flags, -static" \
    "$cxx" -std=c++20 -O2 "$source/tests/windows/consumer/game.cpp" \
    $(pkg-config --cflags --libs "$module") -static -o "game.$module.exe"; then
    check "game.$module.exe runs under wine, its news served by the pools" \
      "$source/cmake/run-under-wine.sh" "game.$module.exe" || true
  fi
done
finish
