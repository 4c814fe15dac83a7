#!/usr/bin/env bash
# python3 under `ulimit -v 2000000` (about 1.9 GiB of address space, as a batch scheduler may
# set): a 1200 MiB bytearray must fit, as it does on the system allocator. The pools must not
# take a share of the limit ahead of use.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

python=/usr/bin/python3 # Debian's interpreter, whatever python3 comes first on PATH
pa_require "$python"
pa_setup

large_bytearray() {
  ulimit -v 2000000
  env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP -u PYTHONUSERBASE PYTHONHASHSEED=0 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONMALLOC=malloc "$python" -s -c '
data = bytearray(1200 * 2**20)
data[-1] = 1
small = [str(i) for i in range(100000)]
print(len(data), data.count(1), len(small))'
}

pa_compare python-bytearray-under-ulimit 10000 large_bytearray
pa_finish
