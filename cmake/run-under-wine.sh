#!/bin/sh
# run-under-wine.sh PROGRAM ARGS...: the mingw preset's CMAKE_CROSSCOMPILING_EMULATOR. Runs a
# Windows program under wine in the prefix WINEPREFIX names, once a wine session is running.
#
# The first program of a wine session starts the session's services (services.exe,
# explorer.exe, ...), which inherit its stdout and stderr and live as long as the session. ctest
# waits until a test's output closes, so a test that started the session waited for its end,
# which tests running back to back put off past the test's time limit. So the session is started
# here, its output on /dev/null, kept 60 s past its last program, and under a lock, so that two
# tests starting together do not both start it.
set -eu
{
  flock 9
  # wineserver -p60 exits 0 when it has started a server, 2 when one is running, 1 when the
  # prefix does not exist yet (then wineboot makes it, in a server of its own). Neither inherits
  # the lock: the session would hold it.
  if [ ! -d "$WINEPREFIX" ] || wineserver -p60 9>&-; then
    wine wineboot --init 9>&-
  fi
} 9>"$WINEPREFIX.lock" </dev/null >/dev/null 2>&1
exec wine "$@"
