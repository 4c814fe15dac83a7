#!/usr/bin/env bash
# Builds DIR: a minimal Debian 12 (bookworm) root with python3, made by debootstrap from
# deb.debian.org, for the package test (deb_install.sh), which installs into copies of it. Does
# nothing when DIR is there (it appears only once complete); runs at the same time build it
# once. Needs root and debootstrap, and downloads about 100 MB.
#   tests/package/debian_root.sh DIR
set -euo pipefail
if (($# != 1)); then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$(realpath -m "$1")
partial=$dir.partial
mkdir -p "$(dirname "$dir")"
exec 8>"$dir.lock"
flock 8
if [[ -d $dir ]]; then
  exit 0
fi

# Unmounts what an interrupted debootstrap left mounted in the partial root, then removes it
# (--one-file-system: never into a mount that is still there).
remove_partial() {
  local mount
  [[ -e $partial ]] || return 0
  awk -v root="$partial/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r mount; do umount "$mount" || true; done
  rm -rf --one-file-system "$partial"
}
remove_partial

started=$SECONDS
debootstrap --variant=minbase --include=python3-minimal bookworm "$partial" \
  http://deb.debian.org/debian &
debootstrap=$!
trap 'kill "$debootstrap" 2>/dev/null || true; wait "$debootstrap" || true; remove_partial; exit 143' \
  INT TERM
status=0
wait "$debootstrap" || status=$?
trap - INT TERM
if ((status != 0)); then
  echo "debian_root: debootstrap failed (status $status); its log:" >&2
  tail -n 30 "$partial/debootstrap/debootstrap.log" >&2 || true
  remove_partial
  exit 1
fi
mv "$partial" "$dir"
echo "debian_root: $dir built in $((SECONDS - started)) s"
