#!/usr/bin/env bash
# Holds FixedPool's fast path to the instruction count stated in fixed_pool.hpp ("an
# allocate/deallocate pair ... measures N instructions"): callgrind counts fixed_pool_pairs at
# 1M and 2M pairs, and the difference over 1M is one pair's cost, start-up cancelled out.
#   fixed_pool_instructions.sh PROGRAM HEADER
set -euo pipefail
program=$1
header=$2
budget=$(tr '\n' ' ' <"$header" |
  sed -n 's|.*allocate/deallocate pair[^.]* measures \([0-9][0-9]*\) instructions.*|\1|p')
[[ -n $budget ]] || { echo "no 'allocate/deallocate pair ... measures N instructions' in $header" >&2; exit 1; }

instructions() {  # instructions PAIRS
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$program" "$1" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
n1=$(instructions 1000000)
n2=$(instructions 2000000)
pair=$(((n2 - n1) / 1000000))
echo "FixedPool allocate/deallocate pair: $pair instructions (budget $budget)"
((pair <= budget))
