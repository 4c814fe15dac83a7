#!/usr/bin/env bash
# cmake --install into an empty prefix gives exactly the tree README describes: the wrapper, the
# headers, the versioned shared libraries (soname lib*.so.MAJOR, dev link lib*.so) and the
# archives, the CMake and pkg-config files, the man pages and the licence.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prefix=$scratch/prefix
install_into "$prefix"

{
  echo bin/poolalloc
  (cd "$source" && find include/poolalloc -type f)
  for name in poolalloc poolalloc-debug; do
    for file in "lib$name.a" "lib$name.so" "lib$name.so.$major" "lib$name.so.$version" \
      "pkgconfig/$name.pc"; do
      echo "$libdir/$file"
    done
  done
  echo "$libdir/pkgconfig/poolalloc-toolkit.pc"
  for file in poolallocConfig.cmake poolallocConfigVersion.cmake poolallocTargets.cmake \
    poolallocTargets-CONFIG.cmake poolalloc_link_feature.cmake; do
    echo "$libdir/cmake/poolalloc/$file"
  done
  for page in "$source"/docs/man/*.[1-9]; do
    if [[ -f $page ]]; then echo "share/man/man${page##*.}/${page##*/}"; fi
  done
  echo share/doc/poolalloc/LICENSE
  echo share/doc/poolalloc/README.md
} | sort >expected
# poolallocTargets-<config>.cmake is named after the build type.
(cd "$prefix" && find . -type f -o -type l) |
  sed 's|^\./||; s|/poolallocTargets-[a-z]*\.cmake$|/poolallocTargets-CONFIG.cmake|' | sort >installed
if diff expected installed >layout.diff; then
  echo "ok: the installed tree (expected - installed: none)"
else
  pa_fail "the installed tree differs (expected -, installed +):"
  cat layout.diff
fi

pa_expect "bin/poolalloc is executable" yes "$([[ -x $prefix/bin/poolalloc ]] && echo yes)"
for name in poolalloc poolalloc-debug; do
  lib=$prefix/$libdir/lib$name
  pa_expect "lib$name.so is the dev link to the soname" "lib$name.so.$major" "$(readlink "$lib.so")"
  pa_expect "lib$name.so.$major links to the library" "lib$name.so.$version" \
    "$(readlink "$lib.so.$major")"
  dynamic=$(readelf -d "$lib.so.$version")
  pa_expect "lib$name.so.$version: SONAME" "[lib$name.so.$major]" \
    "$(awk '/\(SONAME\)/ { print $NF }' <<<"$dynamic")"
  pa_expect "lib$name.so.$version: no RPATH or RUNPATH into the build tree" "" \
    "$(grep -E '\((RPATH|RUNPATH)\)' <<<"$dynamic" || true)"
done
finish
