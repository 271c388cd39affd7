#!/bin/sh
# Speedup over base pages of asap, approx-online and online (Romer's policies,
# Fang et al., "Online Superpage Promotion Revisited", SIGMETRICS 2000, §3.1) on every
# bundled trace, on the PA-RISC presets, copying and remapping: a Markdown table
# (docs/papers.md).
B=${PAGELAB:-target/release/pagelab}
echo "| machine | mechanism | trace | asap | approx-online | online | online / approx-online |"
echo "|---|---|---|---|---|---|---|"
for m in pa-risc-32 pa-risc-128; do
  for mech in copy remap; do
    for t in data/traces/*.plt; do
      row="| $m | $mech | \`$(basename "$t")\`"
      for pol in asap approx-online online; do
        s=$($B simulate -q --machine $m --policy $pol --mechanism $mech --baseline --trace "$t" --json - |
          python3 -c "import json,sys; print(json.load(sys.stdin)['baseline']['speedup'])") || exit 1
        row="$row | $(printf %.3f "$s")"
        eval "s_$(echo $pol | tr -d -)=$s"
      done
      echo "$row | $(python3 -c "print('%.2f' % ($s_online / $s_approxonline))") |"
    done
  done
done
