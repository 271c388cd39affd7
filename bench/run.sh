#!/usr/bin/env bash
# Throughput benchmark on the standard 100-million-reference trace.
#
#   bench/run.sh [N]        (N references, default 100000000; files go to bench/out/)
#
# 1. builds the standard generator (bench/gen.rs, a copy of shared/bench/gen.rs) and
#    writes the raw trace (800 MB per 100 M references, plus two sibling files);
# 2. converts it to pagelab's native format with `pagelab trace convert`;
# 3. runs `pagelab-bench` (reading the native format; one 64-entry 4-way LRU TLB with
#    radix walks; the skylake preset; reference miss ratios) — medians of 3 runs, one
#    core;
# 4. runs `pagelab simulate` on it under /usr/bin/time for its peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
out=bench/out
mkdir -p "$out"
cargo build --release -p pagelab-cli --bins
base="$out/t$n"
if [ ! -f "$base.va.u64" ]; then
  rustc -C opt-level=3 bench/gen.rs -o "$out/gen"
  "$out/gen" "$n" "$base" 42
fi
# (re)convert when the native file is missing or was written in an older format version
if ! target/release/pagelab trace info "$base.plt" >/dev/null 2>&1; then
  target/release/pagelab trace convert --from u64 --workload "standard benchmark trace, $n references, seed 42" \
    "$base.va.u64" "$base.plt"
fi
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== pagelab-bench $base.plt"
target/release/pagelab-bench "$base.plt" $([ "$n" = 100000000 ] && echo --expect-standard)
echo "== pagelab simulate (default machine) under /usr/bin/time"
/usr/bin/time -f "peak RSS %M KB, %e s wall" target/release/pagelab simulate --trace "$base.plt" >/dev/null
