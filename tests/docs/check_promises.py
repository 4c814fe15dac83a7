#!/usr/bin/env python3
"""Checks that every test the promise tables of a page name exists in the tree.

    check_promises.py --root DIR PAGE.md

The section "Promises and the tests that hold them" of PAGE holds tables whose last column names
the tests that hold each promise, in backticks:

- `executable` `Suite.Name` ...: GoogleTest tests (TEST, TEST_F or TEST_P) in the sources that
  a CMakeLists.txt under DIR/tests or DIR/bench gives that executable (after SOURCES, in
  add_executable, or in target_sources);
- `name`: a test that such a CMakeLists.txt registers with add_test(NAME ...), directly or
  through a loop or a function (each ${...} of the registered name then stands for a word of
  that file: an item of the loop, an argument of a call of the function).

A row whose last column starts with "untested" may name no test, and one that
starts with "broken" (a promise the code does not keep yet, with the issue that will change the
code or the sentence and what happens meanwhile, in words) names none; every other row must name
at least one. Every name must exist, so that the table cannot rot when
a test is renamed or removed. The untested and the broken promises are listed.
"""

import argparse
import re
import sys
from pathlib import Path

SECTION = "## Promises and the tests that hold them"
GTEST_NAME = re.compile(r"^[A-Z]\w*\.\w+$")
CALL = re.compile(r"\b(\w+)\(\s*([^()]*(?:\([^()]*\)[^()]*)*)\)", re.S)
ADD_TEST = re.compile(r"add_test\(\s*NAME\s+(\S+)")


def rows_of(page):
    """(line number, last cell) of every table row of the section, header rows left out."""
    lines = page.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(SECTION)
    except ValueError:
        raise SystemExit(f"{page}: no section '{SECTION}'")
    rows = []
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            continue  # the separator
        rows.append((number, cells[-1]))
    # The first row of each table is its header: the row above a separator.
    headers = set()
    for number, line in enumerate(lines, 1):
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
            headers.add(number - 1)
    return [(number, cell) for number, cell in rows if number not in headers]


class Tree:
    def __init__(self, root):
        self.sources = {}  # executable -> its source files
        self.registered = []  # a regex per add_test name
        cmakes = [*Path(root).glob("tests/**/CMakeLists.txt"), *Path(root).glob("bench/CMakeLists.txt")]
        for cmake in sorted(cmakes):
            text = cmake.read_text(encoding="utf-8")
            for call in CALL.finditer(text):
                words = call.group(2).split()
                if not words:
                    continue
                if call.group(1) == "add_executable":
                    files = words[1:]
                elif call.group(1) == "target_sources":
                    files = words[2:]  # after the scope (PRIVATE)
                elif "SOURCES" in words:
                    files = words[words.index("SOURCES") + 1 :]
                else:
                    continue
                found = [cmake.parent / f for f in files if re.search(r"\.(cpp|c)$", f)]
                self.sources.setdefault(words[0], []).extend(found)
            # A ${...} in a registered name stands for a word of the same file: a loop's item
            # or a function's argument.
            words = "|".join(sorted(map(re.escape, set(re.findall(r"[\w.+-]+", text))),
                                    key=len, reverse=True))
            for name in ADD_TEST.findall(text):
                parts = re.split(r"\$\{[^}]*\}", name)
                self.registered.append(re.compile(f"(?:{words})".join(map(re.escape, parts))))

    def has_gtest(self, executable, name):
        suite, test = name.split(".", 1)
        declaration = re.compile(rf"\bTEST(_F|_P)?\(\s*{suite}\s*,\s*{test}\s*\)")
        return any(declaration.search(source.read_text(encoding="utf-8"))
                   for source in self.sources.get(executable, []) if source.exists())

    def has_ctest(self, name):
        return any(pattern.fullmatch(name) for pattern in self.registered)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("page")
    args = parser.parse_args()
    page, tree = Path(args.page), Tree(args.root)
    problems, untested, broken, promises, tests = [], [], [], 0, 0
    for number, cell in rows_of(page):
        promises += 1
        names = re.findall(r"`([^`]+)`", cell)
        if cell.lower().startswith("untested"):
            untested.append(f"{page}:{number}: untested")
        elif cell.lower().startswith("broken"):
            broken.append(f"{page}:{number}: {cell}")
            continue  # what happens meanwhile, in words: it names no test
        elif not names:
            problems.append(f"{page}:{number}: the promise names no test")
        executable = None
        for name in names:
            if GTEST_NAME.match(name):
                tests += 1
                if executable is None:
                    problems.append(f"{page}:{number}: {name} follows no executable")
                elif not tree.has_gtest(executable, name):
                    problems.append(f"{page}:{number}: {executable} has no test {name}")
            elif name in tree.sources:
                executable = name
            else:
                tests += 1
                if not tree.has_ctest(name):
                    problems.append(f"{page}:{number}: no test is registered as {name}")
    for line in untested + broken + problems:
        print(line)
    print(f"{page.name}: {promises} promises, {tests} tests named, {len(untested)} untested, "
          f"{len(broken)} broken, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
