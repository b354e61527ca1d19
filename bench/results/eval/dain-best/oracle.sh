#!/usr/bin/env bash
# Issue 51's oracle bound for the accurate preset: on the two tensors of
# `dainx synth` in study/oracle/data (300³ and 100⁴, 60 000 cells, rank-5
# CP values plus noise 0.1, seed 7, made with their generators), the
# `-preset accurate` runs of run.sh — DAIN at 50% against no new cells on
# the legacy splits of seeds 1..10 — once with the new cells valued as the
# preset values them (the stacked ensemble) and once by the generator
# (-values oracle: the true value plus the tensor's noise). The gap
# between the two is what a better valuation could buy the best model.
# Usage: [OUT=dir] [REPEATS=n] bench/results/eval/dain-best/oracle.sh DAINX [TENSOR...]
set -euo pipefail
dainx=$1; shift
data=bench/results/eval/study/oracle/data
out=${OUT:-bench/results/eval/dain-best/oracle}
for name in ${@:-synth3 synth4}; do
  order=$( (gzip -dc "$data/$name.tsv.gz" || true) | awk 'NR == 1 { print NF - 1; exit }')
  base="-backend cpu -quiet -preset accurate -split legacy -methods dain -ratios 0,0.5 -layers $((order * 16)),64,32 -epochs 20 -patience 5"
  for values in predictor oracle; do
    extra=""
    [ "$values" = oracle ] && extra="-values oracle -oracle $data/$name.generator.json"
    dir=$out/$name-$values
    mkdir -p "$out"
    resume=""
    [ -f "$dir/runs.json" ] && resume=-resume
    "$dainx" eval $base $extra -repeats "${REPEATS:-10}" $resume -input "$data/$name.tsv.gz" -out "$dir"
  done
done
