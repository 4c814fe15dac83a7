#!/usr/bin/env bash
# Holds Pool<T>'s fast paths to the instruction count stated in object_pool.hpp ("a spawn and
# despawn pair ... measures N instructions"): callgrind counts pool_churn_pairs at 20 and 40
# rounds of 10,000 pairs, and the difference over 200,000 pairs is one pair's cost, the start-up
# and the first round (which gives each slot its stamp) cancelled out.
#   pool_churn_instructions.sh PROGRAM HEADER
set -euo pipefail
program=$1
header=$2
budget=$(tr '\n' ' ' <"$header" |
  sed -n 's|.*a spawn and despawn pair[^.]* measures \([0-9][0-9]*\) instructions.*|\1|p')
[[ -n $budget ]] || { echo "no 'a spawn and despawn pair ... measures N instructions' in $header" >&2; exit 1; }

instructions() {  # instructions ROUNDS
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$program" "$1" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
n1=$(instructions 20)
n2=$(instructions 40)
pair=$(((n2 - n1) / 200000))
echo "Pool<T> spawn and despawn pair: $pair instructions (budget $budget)"
((pair <= budget))
