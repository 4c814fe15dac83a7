"""Whole-program workload: object-heavy Python (run with PYTHONMALLOC=malloc so that every
object goes through malloc). Builds and drops dicts, lists, tuples, strings and instances of a
class, sorts, joins and counts; prints a checksum that is the same under every allocator.
Usage: python3 objects.py N"""
import sys


class Node:
    __slots__ = ("key", "value", "children")

    def __init__(self, key, value):
        self.key = key
        self.value = value
        self.children = []


def build_tree(n):
    nodes = [Node(i, str(i) * (i % 5 + 1)) for i in range(n)]
    for i in range(1, n):
        nodes[(i - 1) // 4].children.append(nodes[i])
    return nodes[0]


def walk(node):
    total, stack = 0, [node]
    while stack:
        current = stack.pop()
        total += current.key + len(current.value)
        stack.extend(current.children)
    return total


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    checksum = 0
    for round_ in range(4):
        table = {f"key-{i}-{round_}": [i, str(i), (i, i * 2)] for i in range(n)}
        checksum += sum(len(v[1]) for v in table.values())
        words = sorted(k[::-1] for k in table)
        checksum += len(",".join(words[:: max(1, n // 1000)]))
        del table, words
        checksum += walk(build_tree(n // 2))
        counts = {}
        for i in range(n):
            word = "w" + str(i % 997)
            counts[word] = counts.get(word, 0) + 1
        checksum += len(counts) + max(counts.values())
        checksum += sum(len(t) for t in [tuple(range(i % 16)) for i in range(n)])
    print("python checksum", checksum % (1 << 61))


main()
