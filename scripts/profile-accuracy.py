#!/usr/bin/env python3
"""The heap profile's accuracy and cost beside jemalloc's prof (docs/benchmarks.md, "The heap
profile and memory tags"). known_sites (tests/heap_profile) runs RUNS times under each of
poolalloc and jemalloc with its heap profile on at the same mean (512 KiB: poolalloc's default,
jemalloc's lg_prof_sample:19), each run drawing its own samples, and RUNS times with it off; the
four configurations interleaved, one run at a time, the first rotated each round. Each second dump
is read the way users read it: `go tool pprof -top` for poolalloc's, `jeprof --text` for
jemalloc's. Printed (markdown): per site, the truth, the mean estimate and the worst run, in % of
the truth; per configuration, the median wall time and peak RSS of a run.

  scripts/profile-accuracy.py [--build DIR] [--jemalloc LIB] [--runs N]
                              [--scale LIVE_48 LIVE_4K CHURNED LEAK]

  --build   where known_sites and libpoolalloc.so are built (default build/:
            cmake --preset default && cmake --build build --target known_sites poolalloc)
  --scale   known_sites' sizes in MiB (default 64 16 1024 8)

With the profile off, poolalloc runs as it ships and jemalloc with prof:true,prof_active:false
(nothing sampled; known_sites' dumps, asked of either, then hold nothing)."""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "heap_profile"))
import check_accuracy  # noqa: E402  (the sites, the predicted deviation, pprof's reading)

MIB = 1 << 20
JEMALLOC_ON = "prof:true,lg_prof_sample:19,prof_final:false"
JEMALLOC_OFF = "prof:true,prof_active:false,prof_final:false"
SITES = ["site_live_48_bytes", "site_live_4_kib", "site_leaked_between_dumps", "site_churned"]


def jeprof_inuse(program, profile):
    """In-use bytes per site function, from `jeprof --text --show_bytes --inuse_space`."""
    out = subprocess.run(["jeprof", "--text", "--show_bytes", "--inuse_space", program, profile],
                         capture_output=True, text=True, check=True).stdout
    flat = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5] in check_accuracy.SITES:
            flat[fields[5]] = float(fields[0])
    return flat


def run(command, environment):
    """Wall time (ms) and peak RSS (KiB) of one run, which must succeed."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed with {process.returncode}")
    return elapsed, usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--jemalloc", default="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scale", type=int, nargs=4, default=[64, 16, 1024, 8])
    args = parser.parse_args()
    program = os.path.join(args.build, "tests/heap_profile/known_sites")
    poolalloc = os.path.join(args.build, "src/libpoolalloc.so")
    for needed in (program, poolalloc, args.jemalloc):
        if not os.path.exists(needed):
            sys.exit(f"profile-accuracy: {needed} is missing")
    for tool in ("go", "jeprof"):
        if shutil.which(tool) is None:
            sys.exit(f"profile-accuracy: {tool} is not installed (scripts/install-deps.sh)")

    live_48, live_4k, churned, leak = args.scale
    blocks = check_accuracy.blocks_at(args.scale)
    truth = {site: blocks[site] * check_accuracy.SITES[site] for site in SITES}
    truth["site_churned"] = 0

    scratch = tempfile.mkdtemp(prefix="profile-accuracy-")
    os.environ.update(GOCACHE=os.path.join(scratch, "go-cache"), PPROF_TMPDIR=scratch,
                      HOME=scratch)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("POOLALLOC_") and k not in ("LD_PRELOAD", "MALLOC_CONF")}
    configurations = {
        "poolalloc, profile off": dict(base, LD_PRELOAD=poolalloc),
        "poolalloc, profile on": dict(base, LD_PRELOAD=poolalloc, POOLALLOC_PROFILE="1",
                                      POOLALLOC_PROFILE_AT_EXIT="0"),
        "jemalloc, prof off": dict(base, LD_PRELOAD=args.jemalloc, MALLOC_CONF=JEMALLOC_OFF),
        "jemalloc, prof on": dict(base, LD_PRELOAD=args.jemalloc, MALLOC_CONF=JEMALLOC_ON),
    }
    names = list(configurations)
    times = {name: [] for name in names}
    rss = {name: [] for name in names}
    dumps = {"poolalloc, profile on": [], "jemalloc, prof on": []}
    for i in range(args.runs):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            first, second = (os.path.join(scratch, f"{i}.{names.index(name)}.{n}")
                             for n in ("first", "second"))
            command = [program, str(live_48), str(live_4k), str(churned), str(leak), first, second]
            elapsed, peak = run(command, configurations[name])
            times[name].append(elapsed)
            rss[name].append(peak)
            if name in dumps:
                dumps[name].append(second)
        print(f"round {i + 1}/{args.runs} done", file=sys.stderr)

    estimates = {
        "poolalloc": [check_accuracy.top(program, dump, "inuse_space")
                      for dump in dumps["poolalloc, profile on"]],
        "jemalloc": [jeprof_inuse(program, dump) for dump in dumps["jemalloc, prof on"]],
    }
    print(f"known_sites {live_48} {live_4k} {churned} {leak}, {args.runs} runs per configuration; "
          "in-use space at the second dump, a sample every 512 KiB on average")
    print()
    print("| site | truth (MiB) | predicted sd | poolalloc mean | poolalloc worst run | "
          "jemalloc mean | jemalloc worst run |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for site in SITES:
        sd = check_accuracy.predicted_sd(blocks[site], check_accuracy.SITES[site])
        cells = [site, f"{truth[site] / MIB:.2f}"]
        if truth[site]:
            cells.append(f"{sd / truth[site] * 100:.2f} %")
        else:
            cells.append("-")
        for allocator in ("poolalloc", "jemalloc"):
            values = [result.get(site, 0.0) for result in estimates[allocator]]
            mean = sum(values) / len(values)
            worst = max(values, key=lambda v: abs(v - truth[site]))
            if truth[site]:
                cells.append(f"{(mean - truth[site]) / truth[site] * 100:+.2f} %")
                cells.append(f"{(worst - truth[site]) / truth[site] * 100:+.2f} %")
            else:
                cells.append(f"{mean / MIB:.2f} MiB")
                cells.append(f"{worst / MIB:.2f} MiB")
        print("| " + " | ".join(cells) + " |")
    print()
    print("| configuration | median wall time (ms) | min | max | median peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        print(f"| {name} | {statistics.median(times[name]):.1f} | {min(times[name]):.1f} | "
              f"{max(times[name]):.1f} | {statistics.median(rss[name]) / 1024:.1f} |")
    for allocator, off, on in (("poolalloc", names[0], names[1]), ("jemalloc", names[2], names[3])):
        ratio = statistics.median(times[on]) / statistics.median(times[off])
        print(f"\n{allocator}: profile on / off, median wall time: {ratio:.3f}", end="")
    print()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
