#!/usr/bin/env python3
"""Checks the links of Markdown pages: every relative link names a file or folder that exists,
and every #anchor a heading of its page (GitHub's anchors: the heading's text in lower case,
without punctuation, spaces as hyphens).

    check_links.py PAGE.md...
"""

import html
import re
import sys
from pathlib import Path

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(page):
    """The page's lines outside fenced blocks, with their numbers."""
    inside = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            yield number, line


def anchor(heading):
    text = html.unescape(heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(page, cache={}):
    if page not in cache:
        seen, anchors = {}, set()
        for _, line in prose_lines(page):
            match = HEADING.match(line)
            if match:
                name = anchor(match.group(1))
                count = seen.get(name, 0)
                seen[name] = count + 1
                anchors.add(name if count == 0 else f"{name}-{count}")
        cache[page] = anchors
    return cache[page]


def main():
    problems = 0
    for page in map(Path, sys.argv[1:]):
        for number, line in prose_lines(page):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z]+:", target):
                    continue  # https:, mailto:
                path, _, fragment = target.partition("#")
                linked = (page.parent / path).resolve() if path else page.resolve()
                if not linked.exists():
                    problems += 1
                    print(f"{page}:{number}: {target}: no such file")
                elif fragment and linked.suffix == ".md" and fragment not in anchors_of(linked):
                    problems += 1
                    print(f"{page}:{number}: {target}: no heading #{fragment} in {path or page}")
    print(f"{len(sys.argv) - 1} pages, {problems} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
