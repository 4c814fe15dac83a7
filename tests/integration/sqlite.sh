#!/usr/bin/env bash
# sqlite3 under poolalloc: 300,000 rows from a recursive CTE into an on-disk database, two
# indexes, aggregates, a join, a window function, updates, deletes, integrity_check, VACUUM
# (data/sqlite.sql). Then a statement that fails, to compare the error path too.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pa_require sqlite3
pa_setup

workload() {
  sqlite3 test.db <"$pa_data/sqlite.sql"
  # The error path: a parse error must give the same message and status 1.
  sqlite3 -bail test.db 'SELECT count(*) FROM t; SELECT * FROM no_such_table;' && exit 1
  echo "status $?"
}

pa_compare sqlite 100000 workload
pa_finish
