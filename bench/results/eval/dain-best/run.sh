#!/usr/bin/env bash
# Issue 51's 10-split study: -preset accurate (final model chosen by
# validation among Θ's MLP, fm, hybrid and bayes-fm; new cells valued by
# the stacked ensemble of those candidates; -aug-weight auto: bayes-fm
# counts a new cell as a tenth of an observation) with DAIN at 50% against
# the same preset without new cells, on the legacy splits of seeds 1..10
# (those of accurate10/, the placement study and libFM's runs).
# Usage: [OUT=dir] bench/results/eval/dain-best/run.sh DAINX [TENSOR...]
set -euo pipefail
dainx=$1; shift
data=${DATA:-../shared/data}
out=${OUT:-bench/results/eval/dain-best}
for name in ${@:-movielens_latest_small jodie_wikipedia foursquare_nyc movingmnist100}; do
  base="-backend cpu -quiet -preset accurate -split legacy -methods dain -ratios 0,0.5 -layers 48,64,32 -epochs 20 -patience 5"
  case $name in
    movingmnist100) base=${base/48,64,32/64,64,32} ;;
  esac
  resume=""
  [ -f "$out/$name/runs.json" ] && resume=-resume
  "$dainx" eval $base -repeats "${REPEATS:-10}" $resume -input "$data/$name.tsv.gz" -out "$out/$name"
done
