#!/usr/bin/env bash
# study.sh runs issue 14's study (bench/results/eval/study/): does
# influence-guided placement of new cells beat uniform (random-costco) or
# entity-frequency (degree) placement? At ratio 0.5 over 10 paired splits
# (seeds 1–10) of each of the four tensors of ../shared/data (or
# $DAINX_DATA; sources in its README), with the small configuration of
# run.sh (layers N·16,64,32, at most 20 epochs, patience 5):
#
#   part "variants" (study/<tensor>): every variant against random-costco,
#     degree, dain, the training-length control no-aug-steps and no
#     augmentation;
#   part "predictor" (study/predictor/<tensor>): the value-predictor
#     variants with the placement held fixed or changed (random-avg-predictor
#     separates the predictor's gain from placement), a second family;
#   part "diagnose" (study/diagnose/<tensor>): dainx eval -diagnose on the
#     split of seed 1;
#   part "paper-layers" (study/movielens_latest_small_paper_layers): the
#     paper's layers N·50,1024,1024,128 on MovieLens, fewer methods.
#   part "influence" (study/influence/<tensor>, issue 35): the Adam-aware
#     and in-run estimators (dain-tracin-adam, dain-in-run, and their
#     -sign positive forms) against random-costco, degree and dain, the
#     report's Spearman correlation of importance with frequency kept per
#     run in each folder's runs.json;
#   part "oracle" (study/oracle/<synthetic>, issue 35): on two tensors of
#     dainx synth (3 modes 300³ and 4 modes 100⁴, 60 000 cells, rank 5,
#     noise 0.1; made under study/oracle/data/ with their generators), the
#     same placements with the generator's true values for new cells
#     (-values oracle: where cells go, nothing else) and with CoSTCo's
#     (oracle-costco/): the bound on what placement can buy.
#
# summary.md holds the paired differences with 95% intervals and
# Holm-corrected p-values; comparisons.json the same as data. Every eval
# rewrites its outputs after each repeat; an interrupted part is continued
# by running this script again (it passes -resume when an output exists).
# A 2-core machine shared with others: run it as
#   nice -n 19 bash bench/eval/study.sh [part [tensor ...]]
# (default: part variants on movielens_latest_small jodie_wikipedia
# foursquare_nyc movingmnist100). STUDY_REPEATS overrides the 10 repeats;
# STUDY_OUT the output root.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${DAINX_DATA:-../shared/data}
root=${STUDY_OUT:-bench/results/eval/study}
repeats=${STUDY_REPEATS:-10}
part=${1:-variants}
[ $# -gt 0 ] && shift
bin=.dev/dainx-study
go build -o "$bin" ./cmd/dainx
tensors=("$@")
[ ${#tensors[@]} -gt 0 ] || tensors=(movielens_latest_small jodie_wikipedia foursquare_nyc movingmnist100)

# evaluate OUT METHODS [flags…]: one resumable dainx eval at ratios 0, 0.5.
evaluate() {
	local out=$1 methods=$2
	shift 2
	mkdir -p "$out"
	local resume=()
	[ -f "$out/runs.json" ] && resume=(-resume)
	echo "== $out ($(date -u +%FT%TZ))"
	"$bin" eval -backend cpu -methods "$methods" -ratios 0,0.5 -repeats "$repeats" \
		-out "$out" "${resume[@]}" "$@" 2> >(tr '\r' '\n' | grep -v '^$' | tail -n 3 > "$out/progress.log")
}

variants=random-costco,degree,dain,no-aug-steps,dain-mean-entity,dain-signed,dain-tau0.5,dain-tau2,dain-mix0.5,dain-near-cells,dain-avg-predictor,dain-agree
predictor=random-costco,degree,dain,dain-avg-predictor,dain-mix-avg,random-avg-predictor
influence=random-costco,degree,dain,dain-tracin-adam,dain-in-run,dain-tracin-adam-signed,dain-in-run-signed
for t in "${tensors[@]}"; do
	order=3
	[ "$t" = movingmnist100 ] && order=4
	small=(-input "$data/$t.tsv.gz" -layers $((order * 16)),64,32 -epochs 20 -patience 5)
	case $part in
	variants) evaluate "$root/$t" "$variants" "${small[@]}" ;;
	predictor) evaluate "$root/predictor/$t" "$predictor" "${small[@]}" ;;
	diagnose)
		mkdir -p "$root/diagnose/$t"
		"$bin" eval -backend cpu -quiet -diagnose -seed 1 -methods random-costco,degree,dain,no-aug-steps,dain-mean-entity,dain-mix0.5,dain-avg-predictor \
			-ratios 0,0.5 -out "$root/diagnose/$t" "${small[@]}"
		;;
	influence) evaluate "$root/influence/$t" "$influence" "${small[@]}" ;;
	oracle) ;; # below, once
	paper-layers)
		# About 80 s per model on 2 cores: fewer methods, the small run's
		# epoch cap and patience.
		evaluate "$root/${t}_paper_layers" random-costco,degree,dain,dain-mix-avg \
			-input "$data/$t.tsv.gz" -epochs 20 -patience 5
		;;
	*) echo "unknown part $part: want variants, predictor, diagnose, paper-layers, influence or oracle" >&2; exit 2 ;;
	esac
done

if [ "$part" = oracle ]; then
	mkdir -p "$root/oracle/data"
	placements=random-costco,degree,dain,dain-tracin-adam,dain-in-run
	for spec in "synth3:300,300,300" "synth4:100,100,100,100"; do
		name=${spec%%:*} dims=${spec#*:}
		f=$root/oracle/data/$name.tsv.gz g=$root/oracle/data/$name.generator.json
		[ -f "$f" ] || "$bin" synth -dims "$dims" -nnz 60000 -rank 5 -noise 0.1 -seed 7 -output "$f" -generator-out "$g"
		order=$(echo "$dims" | tr ',' '\n' | wc -l)
		small=(-input "$f" -layers $((order * 16)),64,32 -epochs 20 -patience 5)
		evaluate "$root/oracle/$name" "$placements" "${small[@]}" -values oracle -oracle "$g"
		evaluate "$root/oracle/$name-costco" "$placements" "${small[@]}"
	done
fi
