#!/usr/bin/env bash
# The standard benchmark trace in pagelab's native format, made when missing:
#
#   bench/standard-trace.sh [N]     (N references, default 100000000)
#
# builds the standard generator (bench/gen.rs), writes
# the raw trace (800 MB per 100 M references, plus two sibling files) and converts it
# with `pagelab trace convert`; prints the native file's path. Files go to bench/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000000}
out=bench/out
mkdir -p "$out"
base="$out/t$n"
if [ ! -f "$base.va.u64" ]; then
  rustc -C opt-level=3 bench/gen.rs -o "$out/gen" >&2
  "$out/gen" "$n" "$base" 42 >&2
fi
# (re)convert when the native file is missing or was written in an older format version
if ! target/release/pagelab trace info "$base.plt" >/dev/null 2>&1; then
  target/release/pagelab trace convert --from u64 --workload "standard benchmark trace, $n references, seed 42" \
    "$base.va.u64" "$base.plt" >&2
fi
echo "$base.plt"
