#!/usr/bin/env bash
# Issue 37's 10-split study: -preset accurate (final model and value
# predictor chosen by validation: bayes-fm or the MLP) with DAIN at 50%,
# beside each final model on the training cells alone (-baselines), on the
# legacy split of seeds 1..10 (the placement study's and libFM's splits);
# then libFM MCMC (-dim 1,1,32, 200 iterations) on the same training cells
# for the seeds bench/results/eval/libfm/runs.jsonl lacks.
# Usage: bench/results/eval/accurate10/run.sh DAINX [TENSOR...]
set -euo pipefail
dainx=$1; shift
data=${DATA:-../shared/data}
out=bench/results/eval/accurate10
for t in "${@:-jodie_wikipedia movielens_latest_small foursquare_nyc}"; do
  for name in $t; do
    base="-backend cpu -quiet -preset accurate -split legacy -methods dain -ratios 0,0.5 -layers 48,64,32 -epochs 20 -patience 5"
    baselines=mlp,fm,hybrid,bayes-fm
    repeats=10
    case $name in
      foursquare_nyc) baselines=mlp,bayes-fm ;;
      movingmnist100) base=${base/48,64,32/64,64,32}; repeats=${MNIST_REPEATS:-3} ;;
    esac
    resume=""
    [ -f "$out/$name/runs.json" ] && resume=-resume
    "$dainx" eval $base -repeats "$repeats" -baselines "$baselines" $resume -input "$data/$name.tsv.gz" -out "$out/$name"
    have=$(python3 -c "import json,sys
s={json.loads(l)['seed'] for l in open('bench/results/eval/libfm/runs.jsonl') if json.loads(l)['tensor'].endswith('/$name.tsv.gz')}
print(' '.join(str(i) for i in range(1,$repeats+1) if i not in s))")
    if [ -n "$have" ]; then
      LIBFM_REPO=${LIBFM_REPO:-/work/.mirror/srendle+libfm/repo} LIBFM_CACHE=${LIBFM_CACHE:-/tmp/libfm-cache} \
        bench/peers/libfm/run.sh -input "$(realpath "$data/$name.tsv.gz")" -split legacy -seeds "$have" -out bench/results/eval/libfm/runs.jsonl
    fi
  done
done
