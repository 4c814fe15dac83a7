"""Writes SIZE_MIB MiB of deterministic test data to PATH: mostly text lines drawn from a
vocabulary of random hex words (compressible), with random binary chunks (incompressible)."""
import random
import sys

size_mib, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(20240101)
words = [rng.randbytes(rng.randint(1, 8)).hex() for _ in range(20000)]
limit = size_mib << 20
with open(path, "wb") as out:
    written = 0
    while written < limit:
        if rng.random() < 0.1:
            chunk = rng.randbytes(1 << 16)
        else:
            chunk = (" ".join(rng.choices(words, k=8000)) + "\n").encode()
        chunk = chunk[: limit - written]
        out.write(chunk)
        written += len(chunk)
