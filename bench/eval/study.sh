#!/usr/bin/env bash
# study.sh runs issue 14's study (bench/results/eval/study/): does
# influence-guided placement of new cells beat uniform (random-costco) or
# entity-frequency (degree) placement? Every variant of dain/stages.go's
# study list against random-costco, degree, dain, the training-length
# control no-aug-steps and no augmentation, at ratio 0.5 over 10 paired
# splits (seeds 1–10) of each of the four tensors of ../shared/data (or
# $DAINX_DATA; sources in its README), with the small configuration of
# run.sh (layers N·16,64,32, at most 20 epochs, patience 5). summary.md
# holds the paired differences with 95% intervals and Holm-corrected
# p-values; comparisons.json the same as data.
#
# Every eval rewrites its outputs after each repeat; an interrupted study
# is continued by running this script again (it passes -resume when an
# output exists). A 2-core machine shared with others: run it as
#   nice -n 19 bash bench/eval/study.sh [tensor ...]
# (default: movielens_latest_small jodie_wikipedia foursquare_nyc movingmnist100).
# STUDY_REPEATS overrides the 10 repeats; STUDY_OUT the output root.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${DAINX_DATA:-../shared/data}
root=${STUDY_OUT:-bench/results/eval/study}
repeats=${STUDY_REPEATS:-10}
methods=random-costco,degree,dain,no-aug-steps,dain-mean-entity,dain-signed,dain-tau0.5,dain-tau2,dain-mix0.5,dain-near-cells,dain-avg-predictor,dain-agree
bin=.dev/dainx-study
go build -o "$bin" ./cmd/dainx
tensors=("$@")
[ ${#tensors[@]} -gt 0 ] || tensors=(movielens_latest_small jodie_wikipedia foursquare_nyc movingmnist100)
for t in "${tensors[@]}"; do
	order=3
	[ "$t" = movingmnist100 ] && order=4
	out=$root/$t
	mkdir -p "$out"
	resume=()
	[ -f "$out/runs.json" ] && resume=(-resume)
	echo "== $t ($(date -u +%FT%TZ))"
	"$bin" eval -backend cpu -input "$data/$t.tsv.gz" -methods "$methods" \
		-ratios 0,0.5 -repeats "$repeats" \
		-layers $((order * 16)),64,32 -epochs 20 -patience 5 \
		-out "$out" "${resume[@]}" 2> >(tr '\r' '\n' | grep -v '^$' | tail -n 3 > "$out/progress.log")
done

# The paper's layers (N·50,1024,1024,128) on movielens_latest_small, the
# baselines and the variants closest to winning, 50 epochs cap as the paper
# (patience 10); far slower on 2 cores (about 80 s per model):
#   "$bin" eval -backend cpu -input "$data/movielens_latest_small.tsv.gz" \
#     -methods random-costco,degree,dain,no-aug-steps,dain-mix0.5,dain-tau0.5 \
#     -ratios 0,0.5 -repeats 10 -epochs 20 -patience 5 \
#     -out $root/movielens_latest_small_default_layers
