#!/usr/bin/env bash
# Recording throughput: pagelab's Valgrind tool against lackey on the same real program.
#
#   bench/record.sh [KB]      (KB of input for xz, default 300)
#
# The program: xz -1 compressing a generated text file (numbers, one per line). Each
# recorder runs it once, every instruction fetch included, end to end into a compressed
# native trace (`pagelab record`); lackey also runs alone, writing its text to /dev/null
# (its fastest possible). Throughput = references recorded / wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
kb=${1:-300}
out=bench/out/record
mkdir -p "$out"
pagelab=target/release/pagelab
input="$out/xz-input-${kb}KB.txt"
if [ ! -f "$input" ]; then
  # (seq stops on a closed pipe: not an error here)
  { seq 1 100000000 || true; } | head -c "$((kb * 1000))" > "$input"
fi
cmd=(xz -1 --threads=1 -c "$input")
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== program: ${cmd[*]} > /dev/null"

seconds() { # run "$@" with stdout to /dev/null; print wall seconds
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
refs() { "$pagelab" trace info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["references"])'; }
rate() { echo "scale=2; $1 / $2 / 1000000" | bc -l; }

t_native=$(seconds "${cmd[@]}")
printf "native run                              %8.2f s\n" "$t_native"

t=$(seconds "$pagelab" record -q --tool pagelab --fetches all -o "$out/xz-pagelab.plt" -- "${cmd[@]}")
n=$(refs "$out/xz-pagelab.plt")
r_tool=$(rate "$n" "$t")
printf "pagelab record (pagelab tool)           %8.2f s  %12d refs  %8.2f M refs/s\n" "$t" "$n" "$r_tool"

t=$(seconds "$pagelab" record -q --tool lackey --fetches all -o "$out/xz-lackey.plt" -- "${cmd[@]}")
n=$(refs "$out/xz-lackey.plt")
r_lackey_rec=$(rate "$n" "$t")
printf "pagelab record (lackey)                 %8.2f s  %12d refs  %8.2f M refs/s\n" "$t" "$n" "$r_lackey_rec"

t=$(seconds valgrind -q --tool=lackey --trace-mem=yes --log-file=/dev/null "${cmd[@]}")
r_lackey=$(rate "$n" "$t")
printf "lackey alone, text to /dev/null         %8.2f s  %12d refs  %8.2f M refs/s\n" "$t" "$n" "$r_lackey"

best=$(echo "if ($r_lackey > $r_lackey_rec) $r_lackey else $r_lackey_rec" | bc -l)
printf "speed-up of the pagelab tool over lackey's best: %.1fx\n" "$(echo "$r_tool / $best" | bc -l)"
