#!/usr/bin/env bash
# Every `pagelab repro PAPER` from scratch (a fresh folder: every run made, the report
# drawn), timed; then each paper's verdict table goes into docs/repro/PAPER.md and the
# counts and times into the README's repro table, between their markers, so that no
# verdict in the docs is written by hand (crates/pagelab-cli/tests/repro.rs checks them
# against the quick inputs).
#
#   bench/repro.sh [PAPER...]      (default: every paper)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p pagelab-cli --bins
papers=("$@")
[ ${#papers[@]} -gt 0 ] || papers=(fang vrpt navarro cpo rmm)
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
  python3 - "$p" "$dir/$p/verdicts.md" "$dir/$p/verdicts.json" "$secs" <<'PY'
import json, os, re, sys
paper, table, verdicts, secs = sys.argv[1:]
def splice(path, start, end, body):
    text = open(path).read()
    i, j = text.index(start) + len(start), text.index(end)
    open(path, "w").write(text[:i] + "\n" + body + text[j:])
splice(f"docs/repro/{paper}.md", "<!-- verdicts -->", "<!-- /verdicts -->", open(table).read())
sensitivity = os.path.join(os.path.dirname(table), "sensitivity.md")
splice(f"docs/repro/{paper}.md", "<!-- sensitivity -->", "<!-- /sensitivity -->", open(sensitivity).read())
n = json.load(open(verdicts))["counts"]
text = open("README.md").read()
# The row keeps its paper cell; the time and the counts are this run's.
pattern = rf"^(\| `pagelab repro {paper}` \| [^|]+ \| ).*$"
checks = (f"{n['input_checks_agree']} of {n['input_checks']} agree" if n["input_checks"] else "none")
row = (rf"\g<1>{secs} s | {n['measured_agree']} agree, {n['measured_differ']} differ | {checks} | "
       f"{n['not_reproducible']} | [docs/repro/{paper}.md](docs/repro/{paper}.md) |")
text, count = re.subn(pattern, row, text, flags=re.M)
assert count == 1, f"README.md: no row for pagelab repro {paper}"
open("README.md", "w").write(text)
PY
done
