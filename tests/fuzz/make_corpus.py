#!/usr/bin/env python3
"""Writes the seed corpus of malloc_fuzzer into tests/fuzz/corpus/.

The fuzzer reads its input through FuzzedDataProvider, which takes integers from the end of
the input, so hand-written inputs have no readable form: the seeds are pseudo-random bytes of
a few lengths (from a fixed seed, so the files are reproducible), enough for the fuzzer to
start from operation sequences of every length rather than from nothing.

    python3 tests/fuzz/make_corpus.py
"""
import pathlib
import random

corpus = pathlib.Path(__file__).resolve().parent / "corpus"
corpus.mkdir(exist_ok=True)
rng = random.Random(20240611)
for index, length in enumerate([8, 32, 64, 128, 256, 512, 1024, 2048, 4096]):
    data = bytes(rng.randrange(256) for _ in range(length))
    (corpus / f"seed-{index:02d}-{length}").write_bytes(data)
