#!/usr/bin/env bash
# python3 under poolalloc. Usage: python.sh objects|threads malloc|pymalloc
#   objects: millions of small dicts, lists, tuples and strings; sort; json round trip.
#   threads: producer/consumer threads handing objects over a queue (blocks freed by another
#            thread than their allocator's), then waves of short-lived threads.
#   malloc:   PYTHONMALLOC=malloc, so every Python object comes from malloc (the real test);
#   pymalloc: Python's default, where pymalloc serves objects of 512 bytes and less from its
#             own arenas and only the rest reaches malloc.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

workload=${1:?usage: python.sh objects|threads malloc|pymalloc}
allocator=${2:?usage: python.sh objects|threads malloc|pymalloc}
python=/usr/bin/python3 # Debian's interpreter, whatever python3 comes first on PATH
pa_require "$python"
pa_setup

case $workload in
  objects) size=200000 ;;
  threads) size=50000 ;;
  *) pa_die "unknown workload: $workload" ;;
esac
case $allocator in
  malloc) pythonmalloc=malloc min_pooled=1000000 ;;
  pymalloc) pythonmalloc=pymalloc min_pooled=1000 ;;
  *) pa_die "unknown allocator: $allocator" ;;
esac

run_python() {
  env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP -u PYTHONUSERBASE PYTHONHASHSEED=0 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONMALLOC="$pythonmalloc" "$python" -s "$pa_data/$workload.py" "$size"
}

pa_compare "python-$workload-$allocator" "$min_pooled" run_python
pa_finish
