#!/usr/bin/env bash
# The README's performance table, measured on the standard 100-million-reference trace
# in one go on this machine, and written into the README between its markers:
#
#   bench/run.sh [N]        (N references, default 100000000; files go to bench/out/)
#
# 1. makes the standard trace (bench/standard-trace.sh);
# 2. checks the reference results (`pagelab-bench --expect-standard`: the miss ratios of
#    a 64-entry fully associative and a 128 × 12 LRU TLB);
# 3. measures each row under /usr/bin/time (peak memory): `pagelab-bench --only ROW`
#    (median of 3 runs, the second core used where `pagelab simulate` uses it) for the hot
#    paths, and the commands themselves for the analyses (one run each: references /
#    wall time);
# 4. writes the table, with the machine, the date and the commit, into README.md.
#    With N other than the standard trace's, the table is printed and the README left.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
cargo build --release -p pagelab-cli --bins
trace=$(bench/standard-trace.sh "$n")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
machine="$(nproc)-core $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') VM ($(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB)"
echo "== $machine, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$n" = 100000000 ]; then
  echo "== the reference results"
  target/release/pagelab-bench "$trace" --expect-standard --repeat 1 | grep '^check'
fi
# One row: NAME, then the command; its output and "wall-seconds peak-KB" are kept.
measure() {
  local name=$1; shift
  echo "== $name: $*"
  /usr/bin/time -f "%e %M" -o "$out/$name.time" "$@" > "$out/$name.out"
  tail -1 "$out/$name.out"
}
for row in read simulate simulate-one-core skylake skylake-tlbs skylake-virtualized sandy-bridge sandy-bridge-rmm reuse; do
  measure "$row" target/release/pagelab-bench "$trace" --only "$row"
done
measure info target/release/pagelab trace info "$trace"
measure benefit target/release/pagelab analyze benefit --trace "$trace" --machine zen4 --page-size 2M --quiet
measure pagetables target/release/pagelab pagetables compare --trace "$trace" --max-refs 20000000
# The sweep file names the 100 M-reference trace; another N runs a copy naming its own.
sed "s|out/t100000000.plt|$PWD/$trace|" bench/stlb-geometries.toml > "$out/geometries.toml"
measure geometries target/release/pagelab sweep "$out/geometries.toml" -o "$out/geometries.db" --quiet
# pagelab beside libCacheSim in the same run, when bench/peer.py --install has set it up.
if [ -x bench/out/peer-venv/bin/python ]; then
  echo "== peer: bench/peer.py"
  python3 bench/peer.py --json "$out/peer.json" | tail -4
else
  echo "== peer: not installed (bench/peer.py --install adds libCacheSim's rows)"
fi
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates bench || echo ', with changes')"
python3 - "$out" "$trace" "$n" "$machine" "$(date -u +%F)" "$commit" <<'PY'
import re, sys
out, trace, n, machine, day, commit = sys.argv[1:]
n = int(n)
def timed(name):
    wall, kb = open(f"{out}/{name}.time").read().split()[-2:]
    return float(wall), int(kb) / 1000
def bench_rate(name):
    text = open(f"{out}/{name}.out").read()
    return float(re.search(r"^\s*\S+\s+([\d.]+) M refs/s", text, re.M).group(1))
rows = []
def bench(name, task):
    rows.append((task, f"{bench_rate(name):.1f}", f"{timed(name)[1]:.0f} MB",
                 f"`pagelab-bench {trace} --only {name}`"))
def command(name, task, refs, cmd):
    wall, mb = timed(name)
    rows.append((task, f"{refs / wall / 1e6:.1f}", f"{mb:.0f} MB", f"`{cmd}`"))
bench("read", "read the native format")
bench("simulate", "simulate the default machine (64-entry TLB, radix walks, demand paging; the trace decoded on the second core)")
bench("simulate-one-core", "simulate the default machine on one core")
bench("skylake", "simulate `skylake` (split L1 TLBs, 1552-entry STLB, three walk caches, walks read through three data-cache levels, which run on the second core)")
bench("skylake-tlbs", "simulate `skylake` without its data caches (`--set cache.levels=[]`: walks at a flat cost)")
bench("skylake-virtualized", "simulate `skylake` as a guest over a 4-level radix host table (`--set virtualization.host_page=4K`: a two-dimensional walk per TLB miss)")
bench("sandy-bridge", "simulate `sandy-bridge`")
bench("sandy-bridge-rmm", "simulate `sandy-bridge-rmm` (its range TLB; the heap allocated eagerly)")
bench("reuse", "exact reuse distances of the 4K page stream (every TLB size at once)")
command("info", "what the trace holds (`trace info`: footprints, categories, call sites)", n,
        f"pagelab trace info {trace}")
command("benefit", "page-size benefit analysis at 2M on `zen4`", n,
        f"pagelab analyze benefit --trace {trace} --machine zen4 --page-size 2M")
command("pagetables", "the seven page tables, one after another, over the first 20 M references",
        min(n, 20_000_000),
        f"pagelab pagetables compare --trace {trace} --max-refs 20000000")
peer_file = f"{out}/peer.json"
try:
    import json
    peer = json.load(open(peer_file))
except FileNotFoundError:
    peer = {}
for entries, rate in peer.items():
    rows.append((f"a fully associative LRU TLB of {entries} entries, whole process, beside libCacheSim 0.3.5's LRU timed over its C loop in the same run: "
                 f"{rate['default']:.1f} M refs/s with its default table, {rate['sized']:.1f} with one sized to the cache",
                 f"{rate['pagelab']:.1f}", "—", "`bench/peer.py`"))
command("geometries", "a sweep of 16 STLB geometries of `skylake` (LRU, no walk or data caches) in one pass (the 16 runs' references a second; bench/one-pass.sh times the runs apart)",
        16 * n, "pagelab sweep bench/stlb-geometries.toml -o /tmp/geometries.db")
table = (f"On the standard benchmark trace ({n / 1e6:.0f} M references over a 4 GiB heap, "
         f"1 M distinct pages), a {machine}, the second core used where `pagelab simulate` uses it, {day}, commit `{commit}`; "
         "`make bench` measures every row (`bench/run.sh`; how the hot paths are built, and earlier figures: "
         "[docs/performance.md](docs/performance.md)):\n\n"
         "| task | M refs/s | peak memory | command |\n|---|---|---|---|\n"
         + "".join(f"| {' | '.join(r)} |\n" for r in rows))
print(table)
if n == 100_000_000:
    text = open("README.md").read()
    start, end = "<!-- generated: performance -->\n", "<!-- /generated: performance -->"
    i, j = text.index(start) + len(start), text.index(end)
    open("README.md", "w").write(text[:i] + table + text[j:])
    print("README.md: performance table written")
PY
