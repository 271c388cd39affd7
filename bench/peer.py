#!/usr/bin/env python3
"""pagelab beside libCacheSim on the standard trace, in one run on this machine.

    bench/peer.py [--install] [--repeat N] [--json FILE]

For a fully associative LRU TLB of 64 and of 1,536 entries: `pagelab simulate` of a
machine with only that TLB (a whole process: start-up, reading and decompressing the
native file, the TLB, the radix walks and demand paging) against libCacheSim's LRU over
the standard trace's oracleGeneral file (its Python package `libcachesim`, timing only
its C loop over the file, `process_trace`: the peer's start-up and Python are left
out). libCacheSim runs twice: with its default hash table (2^24 buckets, what a user
gets) and with one sized to the cache (2^12 and 2^16 buckets), its fastest here. The
runs alternate; medians of `--repeat` (default 3). Each miss ratio is printed beside
the other as a check: both must be the standard trace's reference results.

libCacheSim is installed only when asked (`--install`: a virtual environment in
bench/out/peer-venv, from the package registry); `make test` never installs it.
`--json FILE` writes the rates (M refs/s) for bench/run.sh's table as well.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import date

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "bench", "out", "peer-venv")
# The standard trace's reference results (the shared benchmark's README).
EXPECTED = {64: 0.254017, 1536: 0.224321}
# Hash-table sizes (log2 of buckets) that suit each cache: libCacheSim's fastest here.
SIZED = {64: 12, 1536: 16}


def venv_python():
    return os.path.join(VENV, "bin", "python")


def install():
    if not os.path.exists(venv_python()):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([venv_python(), "-m", "pip", "install", "-q", "libcachesim"], check=True)


PEER = r"""
import sys, time, libcachesim as lcs
path, entries, hashpower = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
# oracleGeneral records of the standard trace are 4096-byte objects (bench/gen.rs).
cache = lcs.LRU(cache_size=entries * 4096, hashpower=hashpower)
t = time.perf_counter()
miss_ratio, _ = cache.process_trace(reader)
print(time.perf_counter() - t, miss_ratio)
"""


def peer(trace, entries, hashpower):
    out = subprocess.run(
        [venv_python(), "-c", PEER, trace, str(entries), str(hashpower)],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def ours(pagelab, trace, entries, config_dir):
    config = os.path.join(config_dir, f"fa{entries}.toml")
    with open(config, "w") as f:
        f.write(f'[tlb]\nkind = "set-associative"\nsets = 1\nways = {entries}\n')
    t = time.perf_counter()
    out = subprocess.run(
        [pagelab, "simulate", "--quiet", "--trace", trace, "--config", config],
        check=True, capture_output=True, text=True,
    ).stdout
    seconds = time.perf_counter() - t
    ratio = float(re.search(r"tlb miss ratio\s+([\d.]+)", out).group(1))
    return seconds, ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--install", action="store_true",
                    help="install libcachesim into bench/out/peer-venv first")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="write the rates (M refs/s) here too")
    args = ap.parse_args()
    if args.install:
        install()
    if not os.path.exists(venv_python()) or subprocess.run(
            [venv_python(), "-c", "import libcachesim"], capture_output=True).returncode:
        sys.exit("bench/peer.py: libcachesim is not installed; run with --install")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pagelab-cli"], cwd=ROOT, check=True)
    base = subprocess.run([os.path.join(ROOT, "bench", "standard-trace.sh")], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout.strip()
    trace = os.path.join(ROOT, base)
    oracle = trace.replace(".plt", ".vpn.oracleGeneral.bin")
    refs = int(re.search(r"t(\d+)\.plt$", trace).group(1))
    pagelab = os.path.join(ROOT, "target", "release", "pagelab")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    print(f"{os.cpu_count()}-core {cpu}, {date.today()}, {refs / 1e6:.0f} M references")
    rows = []
    for entries in (64, 1536):
        runs = {"pagelab": [], "default": [], "sized": []}
        ratios = {}
        for _ in range(args.repeat):
            s, ratios["pagelab"] = ours(pagelab, trace, entries, os.path.join(ROOT, "bench", "out"))
            runs["pagelab"].append(s)
            s, ratios["default"] = peer(oracle, entries, 24)
            runs["default"].append(s)
            s, ratios["sized"] = peer(oracle, entries, SIZED[entries])
            runs["sized"].append(s)
        rate = {k: refs / statistics.median(v) / 1e6 for k, v in runs.items()}
        for k, r in ratios.items():
            if refs == 100_000_000 and abs(r - EXPECTED[entries]) > 1e-6:
                sys.exit(f"bench/peer.py: {k}'s miss ratio {r} at {entries} entries, expected {EXPECTED[entries]}")
        rows.append((entries, rate, ratios))
    print()
    print("| fully associative LRU | pagelab M refs/s | libCacheSim, default table | libCacheSim, table sized to the cache | pagelab / libCacheSim | miss ratios (pagelab, libCacheSim) |")
    print("|---|---|---|---|---|---|")
    for entries, rate, ratios in rows:
        print(f"| {entries} entries | {rate['pagelab']:.1f} | {rate['default']:.1f} | "
              f"{rate['sized']:.1f} (2^{SIZED[entries]} buckets) | "
              f"{rate['pagelab'] / rate['default']:.2f}× / {rate['pagelab'] / rate['sized']:.2f}× | "
              f"{ratios['pagelab']:.6f}, {ratios['sized']:.6f} |")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({str(e): {**rate, "miss_ratio": ratios["pagelab"]} for e, rate, ratios in rows}, f)


if __name__ == "__main__":
    main()
