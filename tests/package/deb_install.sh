#!/usr/bin/env bash
# The Debian package: cpack -G DEB builds poolalloc_VERSION_amd64.deb holding exactly what
# cmake --install gives; in a fresh Debian 12 root (a copy of the one debian_root.sh builds with
# debootstrap) `apt-get install ./poolalloc_*.deb` installs it, and `poolalloc --stats python3`
# runs there on it: python's output as without it, and the statistics table on stderr.
#   tests/package/deb_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR VERSION DEBIAN_ROOT
set -euo pipefail
if (($# != 5)); then
  echo "usage: $0 BUILD_DIR SOURCE_DIR SCRATCH_DIR VERSION DEBIAN_ROOT" >&2
  exit 2
fi
build=$1 source=$2 scratch=$3 version=$4 debian_root=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../integration/lib.sh
source "$here/../integration/lib.sh" # pa_max_pooled
for program in debootstrap chroot cpack dpkg-deb dpkg-shlibdeps lintian; do
  if ! command -v "$program" >/dev/null; then
    echo "SKIP: $program is not installed (scripts/install-deps.sh installs it)"
    exit 77
  fi
done
if (($(id -u) != 0)); then
  echo "SKIP: debootstrap and chroot need root"
  exit 77
fi
[[ $scratch == "$build"/?* ]] || {
  echo "ERROR: the scratch folder $scratch is not inside the build tree $build" >&2
  exit 2
}
# Unmounts what is mounted under DIR (a run killed before its trap left /proc there).
unmount_under() {
  local mount
  awk -v dir="$1/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r mount; do umount "$mount"; done
}
unmount_under "$scratch"
rm -rf --one-file-system "$scratch"
mkdir -p "$scratch"
cd "$scratch"

# The package, and what it holds.
started=$SECONDS
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/cpack" >cpack.log 2>&1 || {
  cat cpack.log
  echo "ERROR: cpack failed" >&2
  exit 1
}
deb=poolalloc_${version}_amd64.deb
pa_expect "cpack -G DEB builds $deb" "$deb" "$(cd cpack && ls -- *.deb)"
[[ -f cpack/$deb ]] || exit 1
pa_expect "Package, Version, Architecture" "poolalloc|$version|amd64" \
  "$(dpkg-deb -f "cpack/$deb" Package)|$(dpkg-deb -f "cpack/$deb" Version)|$(dpkg-deb -f "cpack/$deb" Architecture)"
pa_expect "Depends names libc6 alone (the libraries need no C++ runtime)" "libc6" \
  "$(dpkg-deb -f "cpack/$deb" Depends | grep -oE '\b(libc6|libstdc\+\+6)\b' | tr '\n' ' ' | xargs)"
pa_expect "the description names the licence" 1 "$(dpkg-deb -f "cpack/$deb" Description | grep -c 'MIT')"
cmake --install "$build" --prefix "$scratch/prefix" >install.log 2>&1
# Debian's conventions (cmake/debian_conventions.cmake): the licence is named copyright, the man
# pages are compressed.
(cd prefix && find . ! -type d | sed 's|^\.|/usr|' |
  sed 's|/share/doc/poolalloc/LICENSE$|/share/doc/poolalloc/copyright|; s|/share/man/man[1-9]/.*|&.gz|' |
  sort) >installed
dpkg-deb -c "cpack/$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | sort >packaged
if diff installed packaged >package.diff; then
  echo "ok: the package holds what cmake --install gives, under /usr, as Debian names it"
else
  pa_fail "the package and cmake --install differ (installed -, packaged +):"
  cat package.diff
fi
dpkg-deb -x "cpack/$deb" contents
mapfile -t libs < <(find contents -name "libpoolalloc*.so.$version")
pa_expect "two shared libraries" 2 "${#libs[@]}"
for lib in "${libs[@]}"; do
  pa_expect "${lib##*/} is stripped and still exports malloc" "0|1" \
    "$(readelf -S "$lib" | grep -c '\.symtab' || true)|$(readelf --dyn-syms "$lib" | grep -c ' malloc$')"
done
dpkg-deb -e "cpack/$deb" control
pa_expect "dpkg's ldconfig trigger is activated" "activate-noawait ldconfig" "$(cat control/triggers)"
# lintian finds nothing but what only a maintainer can give: an e-mail address for the
# Maintainer field, and the Debian changelog that is signed with it.
pa_expect "lintian's errors: the two that need a maintainer's address" \
  "E: poolalloc: malformed-contact Maintainer poolalloc|E: poolalloc: no-changelog usr/share/doc/poolalloc/changelog.gz (native package)" \
  "$(lintian --tag-display-limit 0 "cpack/$deb" 2>/dev/null | grep '^E:' | paste -sd '|')"
echo "cpack and checks: $((SECONDS - started)) s"

# A fresh root: a copy of the debootstrapped one (built now when it is not there yet).
started=$SECONDS
"$here/debian_root.sh" "$debian_root"
echo "Debian root ready: $((SECONDS - started)) s"
started=$SECONDS
root=$scratch/root
cp -a "$debian_root" "$root"
cp "cpack/$deb" "$root/tmp/"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" && rm -rf --one-file-system "$root"' EXIT
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# Dpkg::Use-Pty=0: the root has no /dev/pts.
if ! in_root sh -c 'cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y \
  -o Dpkg::Use-Pty=0 ./poolalloc_*.deb' >apt.log 2>&1; then
  cat apt.log
  pa_fail "apt-get install ./$deb failed in the fresh root"
else
  echo "ok: apt-get install ./$deb in the fresh root"
  pa_expect "poolalloc --version there" "poolalloc $version" "$(in_root poolalloc --version)"
  program='print(sum(len(str(i)) for i in range(100000)), sorted({"pool": 1, "alloc": 2}))'
  expected=$(python3 -c "$program")
  status=0
  in_root poolalloc --stats python3 -c "$program" >python.out 2>python.err || status=$?
  pa_expect "poolalloc --stats python3 there: status and output as without poolalloc" \
    "0|$expected" "$status|$(cat python.out)"
  pa_expect "... and the statistics table on stderr" 1 "$(grep -c '^poolalloc statistics' python.err)"
  pooled=$(pa_max_pooled python.err)
  pa_expect "... whose pools served python" 1 $((${pooled:-0} > 0))
  ((pa_failures == 0)) || cat python.err
fi
echo "install and run in the root: $((SECONDS - started)) s"

if ((pa_failures)); then
  printf '%d check(s) failed\n' "$pa_failures"
  exit 1
fi
echo "all checks passed"
