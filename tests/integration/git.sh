#!/usr/bin/env bash
# git under poolalloc: a repository of 3,000 generated files over three commits (add, modify,
# rename, delete), fsck --full, log --stat, diff, grep, blame, archive, gc, fsck again. Dates,
# names and configuration are fixed, so commit ids and every printed line are deterministic.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pa_require git awk sha256sum
pa_setup

workload() {
  export HOME=$PWD/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  export GIT_AUTHOR_NAME=Author GIT_AUTHOR_EMAIL=author@example.org
  export GIT_COMMITTER_NAME=Committer GIT_COMMITTER_EMAIL=committer@example.org
  export LC_ALL=C TZ=UTC
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY
  mkdir home
  git init -q -b main repo
  cd repo
  git config gc.auto 0
  git config core.autocrlf false
  commit_at() { GIT_AUTHOR_DATE=$1 GIT_COMMITTER_DATE=$1 git commit -q -m "$2"; }

  # 3,000 files in 50 directories, 20 to 80 lines each.
  awk 'BEGIN {
    for (d = 0; d < 50; d++) system("mkdir -p src/d" d)
    for (i = 0; i < 3000; i++) {
      f = "src/d" (i % 50) "/file" i ".txt"
      for (l = 0; l < 20 + (i * 37) % 61; l++) printf "line %d of file %d: value %d\n", l, i, (i * l * 7919) % 10007 > f
      close(f)
    }
  }'
  git add -A
  commit_at 2024-01-01T00:00:00Z "Add 3000 generated files"

  # Modify every third file, rename 100, delete 100.
  awk 'BEGIN { for (i = 0; i < 3000; i += 3) { f = "src/d" (i % 50) "/file" i ".txt"; print "appended line" >> f; close(f) } }'
  for ((i = 1; i < 1000; i += 10)); do git mv "src/d$((i % 50))/file$i.txt" "src/d$((i % 50))/renamed$i.txt"; done
  for ((i = 2; i < 1000; i += 10)); do rm "src/d$((i % 50))/file$i.txt"; done
  git add -A
  commit_at 2024-01-02T00:00:00Z "Modify, rename and delete"

  printf 'new file\n' >src/new.txt
  git add src/new.txt
  commit_at 2024-01-03T00:00:00Z "One more"

  git fsck --full --no-progress
  git rev-parse HEAD 'HEAD^{tree}'
  git log --oneline
  git log --stat >../log.txt
  echo "log --stat: $(wc -l <../log.txt) lines, $(sha256sum <../log.txt)"
  git diff --stat HEAD~2 HEAD | tail -n 1
  echo "diff -M: $(git diff -M HEAD~2 HEAD~1 | sha256sum)"
  echo "grep: $(git grep -c 'value 42$' | wc -l) files"
  git blame -s src/d3/file3.txt | tail -n 2
  echo "archive: $(git archive --format=tar HEAD | sha256sum)"
  git count-objects -v | grep -E '^(count|in-pack|packs)'
  git gc -q
  git count-objects -v | grep -E '^(count|in-pack|packs)'
  git fsck --full --no-progress
  git rev-list --all --objects | wc -l
}

pa_compare git 50000 workload
pa_finish
