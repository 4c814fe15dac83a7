"""Millions of small Python objects: dicts, lists, tuples, strings, ints.

Builds a dict of N entries, churns it, sorts it, round-trips it through json and prints
checksums. The output depends only on N, so it is identical under any allocator that works.
"""
import hashlib
import json
import sys

n = int(sys.argv[1])
digest = hashlib.sha256()

# 1. A dict of n entries, each a small list holding a string, an int and a tuple.
table = {}
for i in range(n):
    k = (i * 7919) % n  # visits every key once, out of order
    table[f"k{k:08d}"] = [str(k), k * k, (k, -k)]
print("entries", len(table))

# 2. Churn: drop every third entry, then put back a different object for each.
for k in range(0, n, 3):
    del table[f"k{k:08d}"]
print("after delete", len(table))
for k in range(0, n, 3):
    table[f"k{k:08d}"] = {"v": k, "s": "x" * (k % 40)}
print("after refill", len(table))

# 3. Sort by a computed key (builds n tuples and a new list).
ordered = sorted(table.items(), key=lambda item: (len(str(item[1])), item[0]))
for key, value in ordered[:: max(1, n // 1000)]:
    digest.update(key.encode())
    digest.update(repr(value).encode())
print("sorted", len(ordered), digest.hexdigest())

# 4. json round trip of the whole table.
text = json.dumps(table, sort_keys=True)
back = json.loads(text)
print("json chars", len(text), hashlib.sha256(text.encode()).hexdigest())
print("json equal", json.dumps(back, sort_keys=True) == text)

# 5. Strings: split, join, set and a Counter-like dict.
words = text[: len(text) // 4].replace('"', " ").replace(",", " ").split()
counts = {}
for w in words:
    counts[w] = counts.get(w, 0) + 1
print("words", len(words), "distinct", len(set(words)), "max", max(counts.values()))
del table, ordered, back, words, counts
print("done")
