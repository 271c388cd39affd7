#!/usr/bin/env bash
# Measure on this machine the costs the presets take from it (bench/host-costs.c):
# prints the machine, the commit and one JSON object of figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O2 -o "$out/host-costs" bench/host-costs.c
echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null | grep -o '\[[a-z]*\]'), $(uname -r), $(git rev-parse --short HEAD), $(date -u +%F)"
"$out/host-costs"
