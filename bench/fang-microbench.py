#!/usr/bin/env python3
"""The microbenchmark of Fang et al., "Online Superpage Promotion Revisited",
SIGMETRICS 2000, §4.1 and §5.1: pagelab's figures beside the paper's.

    bench/fang-microbench.py [--machine pa-risc-32] [--markdown]

Runs `pagelab simulate --synthetic column-walk:iterations=N` (4096 pages, one
reference per page per iteration) under the preset's costs, with base pages, asap and
approx-online, promoting by copying or remapping, and prints:

- the slowdown of copy+asap at one reference per page;
- the cycles per TLB miss, (walks + miss handler + policy + promotions) / misses, of
  remap+asap, copy+asap, remap+aol and copy+aol (approx-online at threshold 8, the
  optimum §5.2 reports for copying, 64 references per page);
- the break-even point of approx-online at thresholds 2, 8 and 32: the fewest
  references per page (powers of two up to 4096) at which the run takes no longer
  than with base pages.

The mechanism's costs are the preset's `[mechanism]` for its kind, the defaults of
the other kind otherwise. PAGELAB names the binary (default target/release/pagelab).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

PAGELAB = os.environ.get("PAGELAB", "target/release/pagelab")
ITERATIONS = [2**k for k in range(13)]
# The paper's figures (§5.1).
PAPER_SLOWDOWN = 94.0
PAPER_PER_MISS = {"remap+asap": 700, "copy+asap": 88000, "remap+aol": 800, "copy+aol": 5800}
# "For copying-based promotion and thresholds of two and eight, the number of
# references per page must be 64 and 16 times the threshold, respectively. For
# remapping and for copying with thresholds of 32 or more, approx-online improves
# performance when the number of references per page is at least eight times the
# threshold."
PAPER_BREAK_EVEN = {
    ("copy", 2): 128,
    ("copy", 8): 128,
    ("copy", 32): 256,
    ("remap", 2): 16,
    ("remap", 8): 64,
    ("remap", 32): 256,
}
# approx-online's threshold for the cycles per miss: 2 remapping (remap+aol2, which
# §5.1 names beside remap+asap), 8 copying (the optimum §5.2 reports for copying).
AOL_THRESHOLD = {"remap": 2, "copy": 8}
AOL_ITERATIONS = 64


def preset(machine):
    out = subprocess.run(
        [PAGELAB, "config", "--machine", machine], check=True, capture_output=True, text=True
    ).stdout
    head, sep, rest = out.partition("\n[promotion]")
    if not sep:
        sys.exit(f"the configuration of {machine} has no [promotion] table")
    mech = rest.partition("\n[mechanism]")[2]
    return head, mech


def run(machine, policy, mechanism, iterations, threshold=None, cache={}):
    key = (machine, policy, mechanism, iterations, threshold)
    if key in cache:
        return cache[key]
    head, mech = preset(machine)
    kind = next(
        (line.split("=")[1].strip().strip('"') for line in mech.splitlines() if line.startswith("kind")),
        None,
    )
    toml = head + f'\n[promotion]\npolicy = "{policy}"\n'
    if threshold is not None:
        toml += f"threshold = {threshold}\n"
    toml += "\n[mechanism]" + mech if kind == mechanism else f'\n[mechanism]\nkind = "{mechanism}"\n'
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(toml)
    try:
        out = subprocess.run(
            [PAGELAB, "simulate", "-q", "--config", f.name, "--synthetic",
             f"column-walk:iterations={iterations}", "--json", "-"],
            check=True, capture_output=True, text=True,
        ).stdout
    finally:
        os.unlink(f.name)
    d = json.loads(out)
    r = d.get("report", d)
    cache[key] = r
    return r


def total(r):
    return sum(r["cycles"].values())


def per_miss(r):
    c = r["cycles"]
    spent = c.get("walks", 0) + c.get("policy", 0) + c.get("promotions", 0)
    return spent / max(1, r["counts"]["walks"])


def break_even(machine, mechanism, threshold):
    for n in ITERATIONS:
        base = total(run(machine, "none", mechanism, n))
        if total(run(machine, "approx-online", mechanism, n, threshold)) <= base:
            return n
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="pa-risc-32")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    a = ap.parse_args()
    m = a.machine
    rows = []
    slow = total(run(m, "asap", "copy", 1)) / total(run(m, "none", "copy", 1))
    rows.append(("slowdown, copy+asap, 1 reference per page", PAPER_SLOWDOWN, slow))
    for name, paper in PAPER_PER_MISS.items():
        mech, pol = name.split("+")
        if pol == "asap":
            r = run(m, "asap", mech, 1)
        else:
            r = run(m, "approx-online", mech, AOL_ITERATIONS, AOL_THRESHOLD[mech])
        rows.append((f"cycles per TLB miss, {name}", paper, per_miss(r)))
    rows.append(("cycles per TLB miss, base pages", 30, per_miss(run(m, "none", "copy", 1))))
    for (mech, t), paper in PAPER_BREAK_EVEN.items():
        rows.append((f"break-even references per page, {mech}+aol{t}", paper, break_even(m, mech, t)))
    if a.markdown:
        print("| measure | paper | pagelab | pagelab / paper |")
        print("|---|---|---|---|")
    for what, paper, ours in rows:
        ratio = "" if ours is None else f"{ours / paper:.2f}"
        shown = "never (to 4096)" if ours is None else f"{ours:,.0f}" if ours >= 10 else f"{ours:.1f}"
        if a.markdown:
            print(f"| {what} | {paper:,} | {shown} | {ratio} |")
        else:
            print(f"{what:55} {paper:>10,} {shown:>16} {ratio:>6}")


if __name__ == "__main__":
    main()
