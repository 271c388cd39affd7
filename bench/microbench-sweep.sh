#!/bin/sh
# Total cycles of the §4.1 microbenchmark on pa-risc-128, by policy+mechanism and iterations.
B=${PAGELAB:-target/release/pagelab}
printf "%-22s" "iterations"; for n in 1 4 16 64 256 1024 4096; do printf "%12s" $n; done; echo
for pm in "none copy" "asap copy" "asap remap" "approx-online copy" "approx-online remap"; do
  set -- $pm
  printf "%-22s" "$1+$2"
  for n in 1 4 16 64 256 1024 4096; do
    c=$($B simulate -q --machine pa-risc-128 --policy $1 --mechanism $2 --synthetic column-walk:iterations=$n --json - | python3 -c "import json,sys; d=json.load(sys.stdin); r=d.get('report',d); print('%.3g' % sum(r['cycles'].values()))")
    printf "%12s" $c
  done; echo
done
