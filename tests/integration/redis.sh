#!/usr/bin/env bash
# redis-server under poolalloc, on 127.0.0.1 and a free port the kernel picks, with no
# persistence and its files in the working directory. redis-benchmark drives 150,000
# requests (set, get, lpush, lpop, incr, hset over a 10,000-key space); its timings differ from
# run to run, so only its success is compared. Then a deterministic script of 37,000 redis-cli
# commands (strings, lists, hashes, sets, sorted sets, 16 KiB values, renames, deletes) runs
# in database 1 and its replies are compared, INFO memory is checked for sanity, and the
# server is stopped with SHUTDOWN NOSAVE so that it exits normally and prints its statistics.
# redis-server is Debian's, linked with jemalloc: under LD_PRELOAD its malloc, free, realloc
# and malloc_usable_size come from poolalloc, which is what a user of the preload gets.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pa_require redis-server redis-cli redis-benchmark /usr/bin/python3
pa_setup

# The commands of the deterministic part, one a line.
commands() {
  local i
  for ((i = 0; i < 5000; i++)); do
    printf 'SET k:%d v%d\n' "$i" $((i * i))
    printf 'RPUSH list:%d %d\n' $((i % 10)) "$i"
    printf 'HSET h:%d f%d %d\n' $((i % 50)) "$i" $((i * 3))
    printf 'SADD s:%d m%d\n' $((i % 20)) $((i % 997))
    printf 'ZADD z %d m%d\n' $((i * 7919 % 10007)) "$i"
    printf 'INCRBY c:%d %d\n' $((i % 5)) "$i"
    printf 'APPEND a:%d x%d\n' $((i % 30)) "$i"
  done
  for ((i = 0; i < 200; i++)); do
    printf 'SETRANGE big:%d %d y\n' $((i % 40)) $((16384 - i))
  done
  printf '%s\n' 'MGET k:1 k:2 k:4999 k:5000' 'LLEN list:3' 'LRANGE list:3 0 9' 'LRANGE list:3 -5 -1' \
    'LPOP list:0 5' 'SORT list:1 DESC LIMIT 0 5' 'HLEN h:7' 'HGET h:7 f57' 'HMGET h:9 f9 f59 f60' \
    'SCARD s:3' 'SORT s:3 ALPHA LIMIT 0 10' 'SUNIONSTORE su s:1 s:2 s:3' 'SINTERCARD 2 s:1 s:3' \
    'ZCARD z' 'ZRANGE z 0 9 WITHSCORES' 'ZRANK z m77' 'ZCOUNT z 100 200' 'ZREVRANGE z 0 4' \
    'MGET c:0 c:1 c:2 c:3 c:4' 'STRLEN a:7' 'GETRANGE a:7 0 40' 'STRLEN big:3' \
    'OBJECT ENCODING list:1' 'OBJECT ENCODING h:1' 'OBJECT ENCODING s:1' 'OBJECT ENCODING z' \
    'RENAME z z2' 'EXISTS z z2' 'DBSIZE'
  for ((i = 0; i < 5000; i += 2)); do
    printf 'DEL k:%d\n' "$i"
  done
  printf '%s\n' 'DEL list:2 h:3 s:4 big:5' 'DBSIZE' 'GET k:4001'
}

workload() {
  local port pid status server_err=$PWD/server.err
  port=$(/usr/bin/python3 -c \
    'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$PWD" \
    --logfile "$PWD/server.log" --daemonize no >server.out 2>"$server_err" &
  pid=$!
  # Whatever happens from here on, the server does not outlive the test.
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  trap 'exit 143' INT TERM

  cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
  local tries
  for ((tries = 0; ; tries++)); do
    [[ "$(cli PING 2>/dev/null)" != PONG ]] || break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "redis-server exited at start up; its log:" >&2
      cat server.log "$server_err" >&2
      exit 1
    fi
    if ((tries == 200)); then
      echo "redis-server did not answer PING within 10 seconds; its log:" >&2
      cat server.log >&2
      exit 1
    fi
    sleep 0.05
  done
  echo "server ready"

  if ! redis-benchmark -h 127.0.0.1 -p "$port" -n 25000 -r 10000 -q \
    -t set,get,lpush,lpop,incr,hset >bench.out 2>bench.err; then
    echo "redis-benchmark failed:" >&2
    tail -n 5 bench.out bench.err >&2
    exit 1
  fi
  echo "redis-benchmark: $(tr '\r' '\n' <bench.out | grep -c ': [0-9.]* requests per second') of 6 tests done"
  echo "keys after the benchmark: $(($(cli DBSIZE) > 5000 ? 1 : 0))"

  commands >commands.txt
  cli -n 1 <commands.txt

  local info used peak
  info=$(cli INFO memory | tr -d '\r')
  used=$(sed -n 's/^used_memory:\([0-9]*\)$/\1/p' <<<"$info")
  peak=$(sed -n 's/^used_memory_peak:\([0-9]*\)$/\1/p' <<<"$info")
  if [[ -n "$used" && -n "$peak" ]] && ((used > 1000000 && peak >= used)); then
    echo "INFO memory: used_memory above 1 MB and at most used_memory_peak"
  else
    printf 'INFO memory looks wrong:\n%s\n' "$info"
  fi
  echo "MEMORY USAGE of a key is positive: $(($(cli -n 1 MEMORY USAGE k:1) > 0 ? 1 : 0))"
  cli -n 1 FLUSHDB
  cli -n 1 DBSIZE

  cli SHUTDOWN NOSAVE >shutdown.out 2>&1 || true
  status=0
  wait "$pid" || status=$?
  trap - EXIT
  echo "redis-server exit status $status"
  cat "$server_err" >&2
}

pa_compare --stats-from server.err redis 100000 workload
pa_finish
