#!/usr/bin/env bash
# Holds a toolkit fast path to the instruction count stated in its header ("PHRASE ... measures N
# instructions"): callgrind counts PROGRAM run with SMALLER and with LARGER as its argument, and
# the difference over the PAIRS that the larger run makes more is one pair's cost, the start-up
# and whatever both runs do once (a first round that stamps each slot) cancelled out.
#   pair_instructions.sh PROGRAM HEADER PHRASE SMALLER LARGER PAIRS
set -euo pipefail
program=$1 header=$2 phrase=$3 smaller=$4 larger=$5 pairs=$6
budget=$(tr '\n' ' ' <"$header" |
  sed -n "s|.*$phrase[^.]* measures \([0-9][0-9]*\) instructions.*|\1|p")
[[ -n $budget ]] || { echo "no '$phrase ... measures N instructions' in $header" >&2; exit 1; }

instructions() {  # instructions ARGUMENT
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$program" "$1" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
n1=$(instructions "$smaller")
n2=$(instructions "$larger")
pair=$(((n2 - n1) / pairs))
echo "$phrase: $pair instructions (budget $budget)"
((pair <= budget))
