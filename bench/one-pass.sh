#!/usr/bin/env bash
# One-pass geometry sweeps: bench/stlb-geometries.toml, 16 STLB geometries (sets 64-512
# × ways 4-16) of `skylake` with an LRU STLB, no walk caches and no data caches (what one
# pass can follow exactly) over the standard trace, run in one pass and as 16 separate runs
# (`--separate`, with -j 1 and with every core); the results compared, and the median
# of 3 timings of each, alternated.
#
#   bench/one-pass.sh [N]   (the standard trace of N references, default 100000000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
cargo build --release -p pagelab-cli --bins
trace=$(bench/standard-trace.sh "$n")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The sweep file names the standard trace of 100 M references; another N, its own copy.
sed "s|out/t100000000.plt|$PWD/$trace|" bench/stlb-geometries.toml > "$dir/sweep.toml"
cores=$(nproc)
echo "== machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# The runs of a database without the time each took (column 7), sorted.
rows() { target/release/pagelab results export "$1" --csv - | cut -d, -f1-6,8- | sort; }
ways=(one-pass "separate -j 1" "separate -j $cores")
for i in 1 2 3; do
  for w in 0 1 2; do
    case $w in
      0) args=() ;;
      1) args=(--separate -j 1) ;;
      2) args=(--separate -j "$cores") ;;
    esac
    rm -f "$dir/r$w.db"*
    s=$(date +%s.%N)
    target/release/pagelab sweep "$dir/sweep.toml" -o "$dir/r$w.db" "${args[@]}" --quiet
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { print e - s }' >> "$dir/t$w"
  done
done
for w in 1 2; do
  if ! diff <(rows "$dir/r0.db") <(rows "$dir/r$w.db") > /dev/null; then
    echo "one pass and ${ways[$w]} differ" >&2
    exit 1
  fi
done
echo "results: identical (16 runs each)"
for w in 0 1 2; do sort -g "$dir/t$w" | sed -n 2p > "$dir/m$w"; done
for w in 0 1 2; do
  awk -v w="${ways[$w]}" -v t="$(cat "$dir/m$w")" -v n="$n" -v one="$(cat "$dir/m0")" \
    'BEGIN { printf "%-14s %7.2f s  %7.1f M refs/s (16 runs)  one pass %.2fx\n", w, t, 16 * n / t / 1e6, t / one }'
done
