#!/usr/bin/env bash
# Throughput benchmark on the standard 100-million-reference trace.
#
#   bench/run.sh [N]        (N references, default 100000000; files go to bench/out/)
#
# 1. makes the standard trace (bench/standard-trace.sh);
# 2. runs `pagelab-bench` (reading the native format; one 64-entry 4-way LRU TLB with
#    radix walks; the skylake preset; reference miss ratios) — medians of 3 runs, one
#    core;
# 3. runs `pagelab simulate` on it under /usr/bin/time for its peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
cargo build --release -p pagelab-cli --bins
trace=$(bench/standard-trace.sh "$n")
base=${trace%.plt}
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== pagelab-bench $base.plt"
target/release/pagelab-bench "$base.plt" $([ "$n" = 100000000 ] && echo --expect-standard)
echo "== pagelab simulate (default machine) under /usr/bin/time"
/usr/bin/time -f "peak RSS %M KB, %e s wall" target/release/pagelab simulate --trace "$base.plt" >/dev/null
