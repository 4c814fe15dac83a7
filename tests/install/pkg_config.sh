#!/usr/bin/env bash
# Programs built against an installed prefix with pkg-config get poolalloc's malloc for the
# whole process, linked with the shared library under -Wl,--as-needed or with the archive
# (pkg-config --static), even when they never name malloc or free; the toolkit's headers build.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prefix=$scratch/prefix
install_into "$prefix"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
for module in poolalloc poolalloc-debug poolalloc-toolkit; do
  pa_expect "pkg-config --modversion $module" "$version" "$(pkg-config --modversion "$module")"
done
pa_expect "the installed prefix in poolalloc.pc" "$prefix" "$(pkg-config --variable=prefix poolalloc)"
# toolkit.md: no -std= flag, so that a program keeps the standard it compiles with (C++20 or later).
pa_expect "no -std= flag in pkg-config --cflags poolalloc-toolkit" 0 \
  "$(pkg-config --cflags poolalloc-toolkit | grep -c -- '-std=' || true)"

# needed PROGRAM: the libraries PROGRAM names in DT_NEEDED, one line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
libs_of() { needed "$1" | tr ' ' '\n' | grep -c '^libpoolalloc' || true; }

runpath=-Wl,-rpath,$prefix/$libdir
new_only=$source/tests/malloc/static_new_only.cpp
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
{
  # C, strdup only, shared, --as-needed: the library must stay on the link.
  for module in poolalloc poolalloc-debug; do
    if check "$module: a C program calling only strdup, --as-needed, builds" \
      "$cc" -std=c11 -Wall -Werror "$source/tests/install/strdup_only.c" \
      $(pkg-config --cflags "$module") -Wl,--as-needed $(pkg-config --libs "$module") \
      "$runpath" -o "strdup_only.$module"; then
      pa_expect "$module: strdup_only loads lib$module.so.$major" 1 \
        "$(needed "strdup_only.$module" | grep -c "lib$module\.so\.$major ")"
      check "$module: strdup_only runs on poolalloc's malloc" "./strdup_only.$module" || true
    fi
  done

  # C++, containers and new only (never malloc or free), shared, --as-needed.
  if check "a C++ program using only new and delete, shared, --as-needed, builds" \
    "$cxx" -std=c++20 -fno-builtin "$new_only" $(pkg-config --cflags poolalloc) \
    -Wl,--as-needed $(pkg-config --libs poolalloc) "$runpath" -o new_only.shared; then
    pa_expect "new_only.shared loads libpoolalloc.so.$major" 1 \
      "$(needed new_only.shared | grep -c "libpoolalloc\.so\.$major ")"
    check "new_only.shared: new and strdup reach the pools" ./new_only.shared || true
  fi

  # The same, linked with the archive (pkg-config --static between -Bstatic and -Bdynamic),
  # under --as-needed, --gc-sections and LTO.
  if check "the same with the archive (pkg-config --static), LTO, --gc-sections, builds" \
    "$cxx" -std=c++20 -O2 -flto -ffunction-sections -fno-builtin "$new_only" \
    $(pkg-config --cflags poolalloc) -flto -Wl,--as-needed -Wl,--gc-sections \
    -Wl,-Bstatic $(pkg-config --static --libs poolalloc) -Wl,-Bdynamic -o new_only.static; then
    pa_expect "new_only.static loads no libpoolalloc*.so" 0 "$(libs_of new_only.static)"
    pa_expect "new_only.static holds no copy of the C++ runtime" 0 \
      "$(nm new_only.static | grep -cE ' [TtW] (__cxa_throw|__gxx_personality_v0)$' || true)"
    check "new_only.static: new and strdup reach the pools" ./new_only.static || true
  fi

  # A prefix with a space: pkg-config prints it escaped, and a shell that undoes the escapes (as
  # make's does) gets working flags.
  spaced="$scratch/with space"
  install_into "$spaced"
  pa_expect "a prefix with a space: escaped in poolalloc.pc" "${spaced// /\\ }" \
    "$(PKG_CONFIG_PATH="$spaced/$libdir/pkgconfig" pkg-config --variable=prefix poolalloc)"
  flags=()
  eval "flags=($(PKG_CONFIG_PATH="$spaced/$libdir/pkgconfig" pkg-config --cflags --libs poolalloc))"
  if check "a prefix with a space: strdup_only builds with its flags" \
    "$cc" -std=c11 -Wall -Werror "$source/tests/install/strdup_only.c" "${flags[@]}" \
    "-Wl,-rpath,$spaced/$libdir" -o strdup_only.spaced; then
    check "a prefix with a space: strdup_only runs on poolalloc's malloc" ./strdup_only.spaced || true
  fi

  # The toolkit alone: headers, no library.
  if check "the toolkit's consumer builds with poolalloc-toolkit.pc" \
    "$cxx" -std=c++20 "$source/tests/toolkit/consumer/main.cpp" \
    $(pkg-config --cflags --libs poolalloc-toolkit) -o toolkit_consumer; then
    pa_expect "toolkit_consumer loads no libpoolalloc*.so" 0 "$(libs_of toolkit_consumer)"
    check "toolkit_consumer runs" ./toolkit_consumer || true
  fi
}
finish
