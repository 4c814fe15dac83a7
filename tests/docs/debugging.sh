#!/usr/bin/env bash
# What docs/debugging.md shows, run: its example program (the page's C block) under glibc, the
# release library, the debug build, valgrind's memcheck and gdb, each giving what the page says.
#   debugging.sh PAGE RELEASE_LIBRARY DEBUG_LIBRARY WORK_DIR
# Skips (status 77) when cc, valgrind or gdb is missing (scripts/install-deps.sh installs them).
set -euo pipefail
# shellcheck source=../integration/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"  # pa_expect, pa_fail, pa_log
page=$(readlink -f "$1") release=$(readlink -f "$2") debug=$(readlink -f "$3") work=$4
for program in cc valgrind gdb; do
  if ! command -v "$program" >/dev/null; then
    printf 'SKIP: %s is not installed (scripts/install-deps.sh installs it)\n' "$program"
    exit 77
  fi
done
rm -rf "$work"
mkdir -p "$work"
cd "$work"
unset LD_PRELOAD POOLALLOC_STATS POOLALLOC_ON_ERROR POOLALLOC_LEAKS

# expect_line WHAT REGEX FILE: some line of FILE matches REGEX (grep -E).
expect_line() {
  if grep -Eq -- "$2" "$3"; then pa_log "ok: $1"; else pa_fail "$1: no line matching [$2] in: $(cat "$3")"; fi
}
# expect_no_line WHAT REGEX FILE
expect_no_line() {
  if grep -Eq -- "$2" "$3"; then pa_fail "$1: a line matches [$2] in: $(cat "$3")"; else pa_log "ok: $1"; fi
}
# run NAME COMMAND...: runs COMMAND with stdout and stderr in NAME.out and NAME.err, and its
# exit status in `status`.
run() {
  local name=$1
  shift
  status=0
  timeout 120 "$@" >"$name.out" 2>"$name.err" || status=$?
}
pooled_requests() { sed -n 's/^pooled requests: \([0-9]*\)$/\1/p' "$1" | tail -n 1; }

# The page's first C block: the program textures.c.
awk '/^```c$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' "$page" >textures.c
[[ -s textures.c ]] || { echo "ERROR: no \`\`\`c block in $page"; exit 1; }
cc -g -o textures textures.c

double_free=(./textures load grass unload unload)
overflow=(./textures load a-name-longer-than-16-bytes unload)
read_after_free=(./textures load grass unload print)

# glibc, then the release library.
run glibc "${double_free[@]}"
expect_line "glibc finds the double free" '^free\(\): double free detected in tcache 2$' glibc.err
run glibc.overflow "${overflow[@]}"
pa_expect "glibc misses the overflow" 0 "$status"
run release env LD_PRELOAD="$release" "${double_free[@]}"
pa_expect "release: a double free aborts" 134 "$status"
expect_line "release: the report" \
  '^poolalloc: free\(0x[0-9a-f]+\): double free of the 16-byte block \(size class 0\)$' release.err

# The debug build: the double free and the overflow with their call sites; the read after free
# shows the 0x5a fill.
site="\\($PWD/textures\\)"  # the module by its full path
run debug env LD_PRELOAD="$debug" "${double_free[@]}"
pa_expect "debug: a double free aborts" 134 "$status"
expect_line "debug: the double free, with its call sites" \
  "^poolalloc-debug: double free: free of 0x[0-9a-f]+ \(16 bytes in a 48-byte block of size class 2, allocated at load_texture\+0x[0-9a-f]+ $site\) at unload_texture\+0x[0-9a-f]+ $site; first freed at unload_texture\+0x[0-9a-f]+ $site$" \
  debug.err
site_of_malloc=$(grep -Eo 'allocated at load_texture\+0x[0-9a-f]+' debug.err | head -n 1)
run addr2line addr2line -f -e ./textures "${site_of_malloc#allocated at }"
pa_expect "addr2line: the call site is the malloc of textures.c" "load_texture|8" \
  "$(head -n 1 addr2line.out)|$(sed -n 's/.*textures\.c:\([0-9]*\).*/\1/p' addr2line.out)"
run debug.overflow env LD_PRELOAD="$debug" "${overflow[@]}"
expect_line "debug: the overflow" \
  "^poolalloc-debug: buffer overflow found when the block was freed: 12 bytes past the end of 0x[0-9a-f]+ \(16 bytes in a 48-byte block of size class 2, allocated at load_texture\+0x[0-9a-f]+ $site\) were overwritten$" \
  debug.overflow.err
run debug.read env LD_PRELOAD="$debug" "${read_after_free[@]}"
expect_line "debug: a read after free prints the 0x5a fill" '^Z{16}' debug.read.out
run debug.leak env LD_PRELOAD="$debug" POOLALLOC_LEAKS=1 ./textures load grass
expect_line "debug: the leak report names load_texture" \
  "^poolalloc-debug:   16 bytes in 1 blocks allocated at load_texture\+0x[0-9a-f]+ $site$" \
  debug.leak.err

# memcheck replaces poolalloc's malloc, with or without --soname-synonyms, and finds the read
# after free; the wrapper's way (LD_PRELOAD set outside valgrind) is the same.
for synonyms in "" "--soname-synonyms=somalloc=libpoolalloc.so*"; do
  label="memcheck ${synonyms:-without synonyms}"
  run memcheck env LD_PRELOAD="$release" POOLALLOC_STATS=1 \
    valgrind ${synonyms:+"$synonyms"} "${read_after_free[@]}"
  expect_line "$label: the read after free" '^==[0-9]+== Invalid read of size 1$' memcheck.err
  expect_line "$label: named in unload_texture" 'by 0x[0-9A-F]+: unload_texture \(textures\.c:' \
    memcheck.err
  pa_expect "$label: the pools serve nothing" 0 "$(pooled_requests memcheck.err)"
done
# A synonym narrows the replacement: the debug build's soname does not match it.
run memcheck.debug env LD_PRELOAD="$debug" POOLALLOC_STATS=1 valgrind "${read_after_free[@]}"
pa_expect "memcheck replaces the debug build's malloc too" 0 \
  "$(pooled_requests memcheck.debug.err)"
run memcheck.debug.synonym env LD_PRELOAD="$debug" POOLALLOC_STATS=1 \
  valgrind "--soname-synonyms=somalloc=libpoolalloc.so*" "${read_after_free[@]}"
pooled=$(pooled_requests memcheck.debug.synonym.err)
pa_expect "somalloc=libpoolalloc.so* leaves the debug build's malloc in place" 1 \
  $((${pooled:-0} > 0))
run memcheck.none env LD_PRELOAD="$release" POOLALLOC_STATS=1 \
  valgrind --soname-synonyms=somalloc=nouserintercepts "${read_after_free[@]}"
pooled=$(pooled_requests memcheck.none.err)
pa_expect "nouserintercepts: the pools serve the program" 1 $((${pooled:-0} > 0))
expect_no_line "nouserintercepts: memcheck misses the read" 'Invalid read' memcheck.none.err

# gdb stops at the report's abort with the program's frames on the stack, and the library
# answers calls there (the debug build's print_stats too, with its lock held). The calls need a
# gdb that can call into the stopped program, which some cannot (gdb 13 on a CPU with AMX:
# "Couldn't write extended state status: Bad address"): a call of getpid() at the same stop
# tells, and where it prints no value the checks of the calls are skipped, with the first line
# gdb answered instead (its stderr and stdout in one file, in the order written).
timeout 120 gdb -q -batch -ex run -ex 'echo probe:\n' -ex 'print (int) getpid()' \
  --args "${double_free[@]}" >gdb.probe 2>&1 || true
probe=$(sed '0,/^probe:$/d' gdb.probe)
# shellcheck disable=SC2016 # gdb's $1, not the shell's
if grep -Eq '^\$1 = [0-9]+$' <<<"$probe"; then
  gdb_calls=1
else
  gdb_calls=0
  reason=$(grep -m 1 -v '^$' <<<"$probe" || true)
  printf 'debugging.sh: skipping the gdb call checks: gdb cannot call into the program here (%s)\n' \
    "${reason:-no answer}"
fi
run gdb gdb -q -batch -ex "set environment LD_PRELOAD $release" -ex run -ex bt \
  -ex 'call (void) poolalloc_print_stats(1)' -ex 'call (void) malloc_stats()' \
  -ex 'print (int) poolalloc_owns(texture)' --args "${double_free[@]}"
expect_line "gdb: stops at SIGABRT" '^Program received signal SIGABRT' gdb.out
expect_line "gdb: the backtrace reaches unload_texture" \
  '^#[0-9]+ +0x[0-9a-f]+ in unload_texture \(\) at textures\.c:' gdb.out
if ((gdb_calls)); then
  expect_line "gdb: poolalloc_print_stats(1)" '^poolalloc statistics' gdb.out
  expect_line "gdb: malloc_stats()" '^poolalloc statistics' gdb.err
  # shellcheck disable=SC2016 # gdb's $1, not the shell's
  expect_line "gdb: poolalloc_owns(texture)" '^\$1 = 1$' gdb.out
  run gdb.debug gdb -q -batch -ex "set environment LD_PRELOAD $debug" -ex run \
    -ex 'call (void) poolalloc_print_stats(1)' --args "${double_free[@]}"
  expect_line "gdb, debug build: poolalloc_print_stats(1) at the report" '^poolalloc statistics' \
    gdb.debug.out
fi

if ((pa_failures)); then
  printf '%d checks failed; outputs in %s\n' "$pa_failures" "$work"
  exit 1
fi
