#!/usr/bin/env bash
# Sweep throughput: 8 runs of the skylake preset (4 STLB associativities × 2 L1 DTLB
# replacement policies) over the standard trace, with `-j 1` (one after another) and
# with `-j` of every core, each into a fresh results database; the median of 5 of each,
# the two alternated.
#
#   bench/sweep.sh [N]      (the standard trace of N references, default 100000000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
cargo build --release -p pagelab-cli --bins
trace=$(bench/standard-trace.sh "$n")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/sweep.toml" <<TOML
traces = ["$PWD/$trace"]
machine = "skylake"
[grid]
"tlb.levels.stlb.ways" = [4, 8, 12, 16]
"tlb.levels.dtlb.replacement" = ["lru", "fifo"]
TOML
cores=$(nproc)
echo "== machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# Alternated, so that drift in the machine's speed falls on both alike.
for i in 1 2 3 4 5; do
  for jobs in 1 "$cores"; do
    rm -f "$dir"/r.db*
    s=$(date +%s.%N)
    target/release/pagelab sweep "$dir/sweep.toml" -o "$dir/r.db" -j "$jobs" --quiet
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { print e - s }' >> "$dir/j$jobs.all"
  done
done
for jobs in 1 "$cores"; do
  sort -g "$dir/j$jobs.all" | sed -n 3p > "$dir/j$jobs"
  awk -v j="$jobs" -v t="$(cat "$dir/j$jobs")" -v n="$n" \
    'BEGIN { printf "-j %-5s %8.2f s  %6.3f runs/s  %6.1f M refs/s   (median of 5)\n", j, t, 8 / t, 8 * n / t / 1e6 }'
done
awk -v c="$cores" -v a="$(cat "$dir/j1")" -v b="$(cat "$dir/j$cores")" \
  'BEGIN { printf "speed-up with -j %s: %.2fx\n", c, a / b }'
