#!/usr/bin/env python3
"""The page tables of Szmajda and Heiser, "Variable Radix Page Table", ACSAC 2003,
§5.2, compared as the paper compares them: memory references and distinct cache lines per TLB reload, behind the
TLB of the `mips-r4x00` preset, and the bytes each table holds.

    bench/vrpt-table.py [TRACE ...] [--machine mips-r4x00]

Without traces: every trace bundled in data/traces/. Runs `pagelab pagetables
compare --machine M --trace T --json -` once per trace and prints Markdown tables.
PAGELAB names the binary (default target/release/pagelab).
"""

import argparse
import glob
import json
import os
import subprocess

PAGELAB = os.environ.get("PAGELAB", "target/release/pagelab")


def compare(machine, trace):
    out = subprocess.run(
        [PAGELAB, "pagetables", "compare", "--machine", machine, "--trace", trace, "--json", "-"],
        check=True, capture_output=True, text=True,
    ).stdout
    return {s["structure"]: s for s in json.loads(out)["structures"]}


def size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):.3g} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--machine", default="mips-r4x00")
    a = ap.parse_args()
    traces = a.traces or sorted(glob.glob("data/traces/*.plt"))
    runs = {os.path.basename(t): compare(a.machine, t) for t in traces}
    names = list(runs)
    structures = list(next(iter(runs.values())))
    for title, cell in (
        ("cache lines per TLB reload (memory references)",
         lambda s: f"{s['lines_mean']:.2f} ({s['refs_mean']:.2f})"),
        ("table bytes", lambda s: size(s["footprint_bytes"])),
    ):
        print(f"\n{title}, behind the TLB of {a.machine}:\n")
        print("| structure | " + " | ".join(f"`{n}`" for n in names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for st in structures:
            print(f"| {st} | " + " | ".join(cell(runs[n][st]) for n in names) + " |")
    print("\nTLB reloads: " + ", ".join(f"`{n}` {runs[n][structures[0]]['lookups']:,}" for n in names))


if __name__ == "__main__":
    main()
