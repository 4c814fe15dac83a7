#!/usr/bin/env bash
# g++ under poolalloc (and so cc1plus, as, collect2 and ld, which inherit LD_PRELOAD): compiles
# data/template_heavy.cpp at -O1, compares the object files' checksums, links and runs the
# program (it runs under poolalloc too), then compiles a file with a template error to compare
# the diagnostics and the failing status.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pa_require g++ sha256sum
pa_setup

workload() {
  export LC_ALL=C
  local cxx=(g++ -std=c++20 -fdiagnostics-color=never -frandom-seed=1)
  "${cxx[@]}" -O1 -Wall -Wextra -c "$pa_data/template_heavy.cpp" -o heavy.o
  sha256sum heavy.o
  "${cxx[@]}" heavy.o -o heavy
  ./heavy

  cat >bad.cpp <<'CPP'
#include <algorithm>
#include <list>
#include <map>
#include <string>
int main() {
  std::list<int> l{3, 1, 2};
  std::sort(l.begin(), l.end());  // needs random-access iterators
  std::map<std::string, int> m;
  return m.at(42);  // no conversion from int to std::string
}
CPP
  "${cxx[@]}" -c bad.cpp -o bad.o || echo "bad.cpp: status $?"
}

pa_compare g++ 100000 workload
pa_finish
