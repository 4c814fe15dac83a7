#!/usr/bin/env bash
# Holds that a FixedPool's deallocate into any of its chunks costs the same whatever their number
# (docs/toolkit.md: a block's chunk is found from its address in O(1)): callgrind counts
# fixed_pool_scattered_frees' deallocate/allocate pairs in a pool of 16 chunks and in one of 1024,
# each at 100,000 and 200,000 pairs (the difference over 100,000 is one pair's cost, start-up
# cancelled out); the pool of 1024 chunks may take at most 10 % more a pair. Scanning the chunks
# would take hundreds of instructions more.
#   fixed_pool_chunks_instructions.sh PROGRAM
set -euo pipefail
program=$1

instructions() {  # instructions CHUNKS PAIRS
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$program" "$1" "$2" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
pair() {  # pair CHUNKS
  local n1 n2
  n1=$(instructions "$1" 100000)
  n2=$(instructions "$1" 200000)
  echo $(((n2 - n1) / 100000))
}
few=$(pair 16)
many=$(pair 1024)
echo "FixedPool deallocate/allocate pair into a scattered chunk: $few instructions with 16 chunks, $many with 1024"
((many * 10 <= few * 11))
