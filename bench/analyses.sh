#!/usr/bin/env bash
# The analyses beside the simulation on a long real recording with allocation events:
#
#   bench/analyses.sh [WORKLOAD]     (a catalogue workload, default python-dict)
#
# records the workload once (`pagelab record --workload`, every reference, under
# Valgrind; bench/out/WORKLOAD.plt), then times, each as a whole process:
# `pagelab trace info`, `pagelab simulate` (the default machine) and `pagelab analyze
# benefit --machine zen4 --page-size 2M`, printing references per second and peak
# memory for each.
set -euo pipefail
cd "$(dirname "$0")/.."
workload=${1:-python-dict}
out=bench/out
mkdir -p "$out"
trace="$out/$workload.plt"
pagelab=target/release/pagelab
cargo build --release -q -p pagelab-cli
if [ ! -f "$trace" ]; then
  "$pagelab" record --workload "$workload" -o "$trace"
fi
refs=$("$pagelab" trace info --json "$trace" | python3 -c 'import json, sys; print(json.load(sys.stdin)["info"]["references"])')
echo "== $(nproc)-core $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F), $trace: $refs references"
run() { # NAME, then the command
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$out/analyses.time" "$@" > /dev/null 2>&1
  read -r wall kb < "$out/analyses.time"
  python3 -c "import sys; r, w, kb = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print(f'{sys.argv[4]:<20} {w:7.1f} s {r / w / 1e6:7.1f} M refs/s {kb / 1000:7.0f} MB')" "$refs" "$wall" "$kb" "$name"
}
run "trace info" "$pagelab" trace info "$trace"
run "simulate" "$pagelab" simulate --quiet --trace "$trace"
run "analyze benefit" "$pagelab" analyze benefit --quiet --trace "$trace" --machine zen4 --page-size 2M
