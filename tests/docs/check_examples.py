#!/usr/bin/env python3
"""Compiles every C and C++ example of a Markdown page, and runs those with a main.

    check_examples.py --cxx CXX --cc CC --include DIR --library ARCHIVE --work DIR PAGE.md

Each fenced block tagged ```cpp or ```c is one translation unit, compiled as it stands with
-Wall -Wextra -Werror against the headers of DIR; a block that includes <poolalloc/poolalloc.h>
is linked with the static library ARCHIVE as the CMake target poolalloc::poolalloc_static links
it (C ones with the C++ runtime as well). A block that defines main is run and must exit with 0 (assert is on: NDEBUG is not defined);
a ```text output block right after it (nothing but blank lines between) is its expected
standard output, compared exactly. Every other block needs a tag of its own (```text, ```sh,
```cmake, ...): an untagged fence, or a C or C++ block under another name (c++, cxx, cc), is
an error, so that no example escapes. Compiler messages point into the page (#line).
Results are kept in the work directory under a digest of everything that goes into them.
--flag adds a compiler flag (repeatable): a page's examples built without exceptions, say.
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

COMPILED = {"cpp": "cpp", "c": "c"}
OTHER_NAMES_OF_COMPILED = {"c++", "cxx", "cc", "h", "hpp", "C"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$")
MAIN = re.compile(r"^\s*int\s+main\s*\(", re.MULTILINE)
LINKS_LIBRARY = re.compile(r"^\s*#\s*include\s*<poolalloc/poolalloc\.h>", re.MULTILINE)


class Block:
    def __init__(self, tag, info, line, text):
        self.tag, self.info, self.line, self.text = tag, info, line, text


def read_blocks(page):
    """The fenced blocks of a page: tag, the rest of the info string, first line, text."""
    blocks, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, tag, info = match.groups()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""
        ):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"{page}:{start}: a fence that is never closed")
        blocks.append(Block(tag, info, start, "\n".join(body) + "\n"))
        i += 1
    return blocks


def expected_outputs(page, blocks):
    """Maps each compiled block to the ```text output block right after it, if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    expected = {}
    for block, following in zip(blocks, blocks[1:]):
        if block.tag not in COMPILED or following.tag != "text" or following.info != "output":
            continue
        end_of_block = block.line + block.text.count("\n")  # the closing fence
        between = lines[end_of_block + 1 : following.line - 1]
        if any(line.strip() for line in between):
            raise SystemExit(f"{page}:{following.line}: a text output block must follow its "
                             "example directly (blank lines only between them)")
        expected[block.line] = following.text
    return expected


def digest_of_tree(directory):
    digest = hashlib.sha256()
    for path in sorted(Path(directory).rglob("*")):
        if path.is_file():
            digest.update(str(path).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def check_block(page, block, options, inputs_digest, expected):
    """Compiles the block (and runs it when it has a main); returns a message or None, and the
    files it keeps in the work directory."""
    where = f"{page}:{block.line}"
    language = COMPILED[block.tag]
    source_text = f'#line {block.line + 1} "{page}"\n{block.text}'
    has_main = bool(MAIN.search(block.text))
    links = has_main and bool(LINKS_LIBRARY.search(block.text))
    if language == "cpp":
        command = [options.cxx, "-std=c++20"]
    else:
        command = [options.cc, "-std=c11"]
    command += ["-Wall", "-Wextra", "-Werror", "-O1", "-I", options.include] + options.flags
    key = hashlib.sha256("\0".join([source_text, inputs_digest] + command).encode()).hexdigest()
    work = Path(options.work)
    source = work / f"{key[:16]}.{language}"
    binary = work / f"{key[:16]}.{'out' if has_main else 'o'}"
    files = {source, binary}
    if not binary.exists():
        source.write_text(source_text, encoding="utf-8")
        if has_main:
            command += [str(source), "-o", str(binary)]
            if links:
                # The archive's objects are C++: a C program needs the C++ runtime too, which
                # CMake adds by linking with the C++ driver.
                command += [options.library, "-Wl,--undefined=malloc", "-pthread", "-ldl"]
                command += ["-lstdc++"] if language == "c" else []
        else:
            command += ["-c", str(source), "-o", str(binary)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            return f"{where}: the {block.tag} example does not compile:\n{result.stderr}", files
    if not has_main:
        print(f"{where}: compiles", flush=True)
        return None, files
    try:
        run = subprocess.run([str(binary)], cwd=work, capture_output=True, text=True,
                             timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return f"{where}: the example ran for over 60 s", files
    if run.returncode != 0:
        return (f"{where}: the example exited with status {run.returncode}\n"
                f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"), files
    if block.line in expected and run.stdout != expected[block.line]:
        return (f"{where}: the example printed\n{run.stdout}\nwhere the page shows\n"
                f"{expected[block.line]}"), files
    print(f"{where}: compiles and runs" + (", output as shown" if block.line in expected else ""),
          flush=True)
    return None, files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--cc", required=True)
    parser.add_argument("--include", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--flag", dest="flags", action="append", default=[],
                        help="one more compiler flag (-fno-exceptions, say); may repeat")
    parser.add_argument("page")
    options = parser.parse_args()
    page = Path(options.page)
    os.makedirs(options.work, exist_ok=True)

    blocks = read_blocks(page)
    problems = 0
    for block in blocks:
        if not block.tag:
            problems += 1
            print(f"{page}:{block.line}: a fence without a tag (```cpp, ```c, ```text, ```sh, ...)")
        elif block.tag in OTHER_NAMES_OF_COMPILED:
            problems += 1
            print(f"{page}:{block.line}: tag C++ examples ```cpp and C ones ```c, not ```{block.tag}")
    expected = expected_outputs(page, blocks)
    library = Path(options.library)
    inputs_digest = digest_of_tree(options.include) + str(library.stat().st_mtime_ns)
    compiled = [block for block in blocks if block.tag in COMPILED]
    kept = set()
    for block in compiled:
        message, files = check_block(page, block, options, inputs_digest, expected)
        kept.update(files)
        if message:
            problems += 1
            print(message, flush=True)
    for stale in Path(options.work).iterdir():  # the results of examples since changed
        if stale not in kept:
            stale.unlink()
    print(f"{page}: {len(compiled)} examples, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
