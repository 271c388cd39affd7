#!/usr/bin/env bash
# Every `pagelab repro PAPER` from scratch (a fresh folder: every run made, the report
# drawn), timed; then each paper's verdict and sensitivity tables and the run's time and
# date go into docs/repro/PAPER.md between their markers, and the README's repro table
# is regenerated from the pages, so that no verdict in the docs is written by hand
# (crates/pagelab-cli/tests/repro.rs checks them against the quick inputs).
#
#   bench/repro.sh [PAPER...]      (default: every paper, as `pagelab repro list` gives them)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p pagelab-cli --bins
papers=("$@")
[ ${#papers[@]} -gt 0 ] || mapfile -t papers < <(target/release/pagelab repro list | awk 'NF {print $1}')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"
for p in "${papers[@]}"; do
  s=$(date +%s.%N)
  target/release/pagelab repro "$p" -o "$dir/$p" --quiet > "$dir/$p.txt"
  e=$(date +%s.%N)
  secs=$(python3 -c "print(f'{$e - $s:.0f}')")
  tail -1 "$dir/$p.txt"
  echo "$p: $secs s"
  python3 - "$p" "$dir/$p/verdicts.md" "$secs" "$(date -u +%F)" <<'PY'
import os, sys
paper, table, secs, day = sys.argv[1:]
page = f"docs/repro/{paper}.md"
def splice(path, name, body):
    text = open(path).read()
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    i, j = text.index(start) + len(start), text.index(end)
    open(path, "w").write(text[:i] + body + text[j:])
splice(page, "verdicts", "\n" + open(table).read())
sensitivity = os.path.join(os.path.dirname(table), "sensitivity.md")
splice(page, "sensitivity", "\n" + open(sensitivity).read())
splice(page, "time", f"{secs} s on {day}")
PY
done
PAGELAB_BLESS=1 cargo test --profile ci -p pagelab-cli --test repro_docs
