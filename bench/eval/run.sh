#!/usr/bin/env bash
# run.sh reproduces bench/results/eval/: `dainx eval` on the four real tensors
# of ../shared/data (or $DAINX_DATA) with the configuration a 2-core CPU
# machine finishes in a few hours:
#   methods dain, duplication, entity-replacement, random-mlp, random-costco,
#   degree (the entity-frequency null model);
#   ratios 0, 0.1 … 0.5; 5 repeats (seeds 1–5);
#   downstream and embedding MLP layers N·16,64,32 (E = 16), at most 20
#   epochs, patience 5, batch 1024, lr 1e-3; CoSTCo R = C = 20, lr 1e-3,
#   batch 256 (the defaults).
# Usage: bash bench/eval/run.sh [tensor ...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${DAINX_DATA:-../shared/data}
go build -o .dev/dainx ./cmd/dainx
tensors=("$@")
[ ${#tensors[@]} -gt 0 ] || tensors=(movielens_latest_small jodie_wikipedia foursquare_nyc movingmnist100)
for t in "${tensors[@]}"; do
	order=3
	[ "$t" = movingmnist100 ] && order=4
	out=bench/results/eval/$t
	mkdir -p "$out"
	echo "== $t ($(date -u +%FT%TZ))"
	.dev/dainx eval -backend cpu -input "$data/$t.tsv.gz" \
		-methods dain,duplication,entity-replacement,random-mlp,random-costco,degree \
		-ratios 0,0.1,0.2,0.3,0.4,0.5 -repeats 5 \
		-layers $((order * 16)),64,32 -epochs 20 -patience 5 \
		-out "$out" 2> >(tr '\r' '\n' | grep -v '^$' | tail -n 3 > "$out/progress.log")
done

# Scalability (paper §5.6, Fig. 8) on Synthetic-1M, one split, DAIN only:
#   dainx synth -output /tmp/synthetic_1M.tsv.gz      # dims 1000⁴, 10⁶ cells, rank 10
#   dainx eval -backend cpu -input /tmp/synthetic_1M.tsv.gz -methods dain \
#       -ratios 0,0.1,0.2,0.3,0.4,0.5,0.75,1 -repeats 1 -layers 64,64,32 \
#       -epochs 20 -patience 5 -out bench/results/eval/synthetic_1M

# Probe for foursquare_nyc (bench/results/eval/foursquare_nyc_positive): the
# same tensor without its uniform-random zero "negatives" (value 0), to see
# whether they are why random cells beat DAIN there:
#   zcat "$data/foursquare_nyc.tsv.gz" | awk '$NF != 0' > /tmp/foursquare_nyc_positive.tsv
#   dainx eval -backend cpu -input /tmp/foursquare_nyc_positive.tsv \
#       -methods dain,random-mlp,random-costco -ratios 0,0.5 -repeats 5 \
#       -layers 48,64,32 -epochs 20 -patience 5 -out bench/results/eval/foursquare_nyc_positive

# Probe for movielens_latest_small with the paper's default layers
# (150,1024,1024,128; bench/results/eval/movielens_latest_small_default_layers):
# does a larger Θ make DAIN's lead over random cells larger? Run in two
# batches (seeds 1–3, then 4–8) and merged:
#   d=bench/results/eval/movielens_latest_small_default_layers
#   for b in "1 3 batch1" "4 5 batch2"; do set -- $b
#     dainx eval -backend cpu -input "$data/movielens_latest_small.tsv.gz" \
#       -methods dain,random-mlp,random-costco -ratios 0,0.5 -repeats $2 -seed $1 \
#       -epochs 20 -patience 5 -out $d/$3
#   done
#   dainx eval -merge $d/batch1,$d/batch2 -out $d
