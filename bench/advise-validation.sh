#!/usr/bin/env bash
# How far `pagelab advise` is from the machine: on each program, the predicted and the
# measured speedup of every mapping of its data to 2 MiB pages, and the error.
#
#   bench/advise-validation.sh [--resume] [--max-seconds S] [NAME...]
#
# --resume keeps what bench/out/advise/ holds of an earlier run (its host.toml and the
# programs whose results are there) and runs only the rest.
# NAME: workloads of workloads/catalogue.toml (default: the list below). For each:
# 1. `pagelab advise --workload NAME --config host.toml` records it, analyses it on
#    this machine as `pagelab calibrate` measured it (host.toml, made first), and runs
#    it natively in rounds (3 at least) until each mapping's 95 % interval leaves out
#    1.0, lies within 1 ± 1 %, or S seconds (default 60) of native runs are spent;
# 2. `pagelab analyze benefit --machine zen4` analyses the same recording as advise
#    did before it priced walks through this machine's caches: zen4's flat walk cost
#    and fault cost (the "before" column), at the same measured all-small time.
# Then bench/advise-validation.py prints per program and mapping the predictions
# beside the measurement, and the mean and worst error where the measured difference
# is larger than the noise; with the default list it writes that to
# docs/advise-validation.md and the summary into README.md between its markers.
# The recordings and results stay in bench/out/advise/. Needs root once for the
# workloads' Debian packages (workloads/setup.sh), `make build native recorder`, and a
# quiet machine: anything else running moves the native times.
set -euo pipefail
cd "$(dirname "$0")/.."
max_seconds=60
resume=0
if [ "${1:-}" = --resume ]; then
  resume=1
  shift
fi
if [ "${1:-}" = --max-seconds ]; then
  max_seconds=$2
  shift 2
fi
default=(randread smallheap gups bfs chess redis-large
         fang-matmul fang-radix fang-cga navarro-transpose cpo-swim
         python-dict sqlite-big sort-large)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${default[@]}")
pagelab=target/release/pagelab
out=bench/out/advise
mkdir -p "$out"
workloads/setup.sh "${names[@]}"
machine="$(nproc)-core $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') VM"
echo "== $machine, load $(cut -d' ' -f1-3 /proc/loadavg), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
if [ $resume = 0 ] || [ ! -s "$out/host.toml" ]; then
  echo "== pagelab calibrate -o $out/host.toml"
  "$pagelab" calibrate -o "$out/host.toml" > "$out/calibrate.txt"
fi
for name in "${names[@]}"; do
  if [ $resume = 1 ] && [ -s "$out/$name.json" ] && [ -s "$out/$name.zen4.json" ]; then
    echo "== $name: kept from the earlier run"
    continue
  fi
  echo "== $name"
  "$pagelab" advise --workload "$name" --config "$out/host.toml" --runs 3 --max-seconds "$max_seconds" \
    --keep-trace "$out/$name.plt" --json "$out/$name.json" > "$out/$name.txt"
  "$pagelab" analyze benefit --trace "$out/$name.plt" --machine zen4 --page-size 2M --quiet \
    --json "$out/$name.zen4.json"
  rm -f "$out/$name.plt"
done
args=("$out" "$machine" "$(date -u +%F)" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ', with changes')")
if [ $# -eq 0 ]; then
  python3 bench/advise-validation.py "${args[@]}" "${names[@]}" --write docs/advise-validation.md README.md
else
  python3 bench/advise-validation.py "${args[@]}" "${names[@]}"
fi
