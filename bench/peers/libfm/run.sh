#!/usr/bin/env bash
# bench/peers/libfm/run.sh: libFM (S. Rendle, github.com/srendle/libfm) as an
# external peer on dainx's own splits (issue 37). Not part of `make test`.
#
#   bench/peers/libfm/run.sh -input TENSOR [-split legacy|keyed] [-seeds "1 2 3"]
#                            [-test-frac 0.1] [-val-frac 0.2] [-index-base -1]
#                            [-format tsv|tns|bin] [-out results.jsonl]
#
# For each seed it
#   1. writes the training, validation and test cells of dainx's split of
#      TENSOR (the cells `dainx augment -input TENSOR -split S -seed N
#      -test-frac T -val-frac V -split-out DIR` writes) in libFM's format,
#      one binary feature per mode (feature = offset of the mode + index),
#      with the Go program next to this script (libfmdata/, which calls
#      package tensor's split functions);
#   2. runs `libFM -task r -method mcmc -dim 1,1,32 -iter 200` trained on
#      the training cells only, predicting the test cells (the validation
#      cells are not used: MCMC needs no early stopping);
#   3. computes the test RMSE of libFM's predictions and prints one JSON
#      line (also appended to -out FILE when given).
#
# libFM itself is read and built here, never vendored:
#   LIBFM_SRC=DIR   use this libFM source tree (a git checkout or a plain
#                   copy; it is copied before building, so DIR stays clean);
#   otherwise       `git clone $LIBFM_REPO` (default
#                   https://github.com/srendle/libfm: needs the network)
#                   into $LIBFM_CACHE/src, once.
#   LIBFM_REF       commit or tag to build (default: the clone's HEAD).
#   LIBFM_COMMIT    the commit to record when LIBFM_SRC is not a git tree.
#   LIBFM_CACHE     default ${XDG_CACHE_HOME:-$HOME/.cache}/dainx-libfm; the
#                   build goes to $LIBFM_CACHE/build-<commit>/bin/libFM.
# Building needs make and g++ (apt-get install make g++; done here when
# running as root on Debian/Ubuntu and they are missing); libFM builds in
# about 10 s.
#
# libFM settings (environment):
#   METHOD=mcmc DIM=1,1,32 ITER=200  libFM's -method, -dim and -iter
#   LIBFM_SEED=1   libFM's -seed (its sampler's seed; libFM's own default
#                  is the clock, so runs would not repeat); "none" omits it
#   META=0         1: pass -meta with one group per mode (users, items, …
#                  each get their own prior), 0: libFM's default (one
#                  group for all features)
#   INIT_STDEV=    libFM's -init_stdev when set (its default is 0.1)
# Other:
#   SEEDS="1 2 3"  the split seeds, when -seeds is not given (default 1)
#   WORK=DIR       keep the libFM files and predictions here (default: a
#                  temporary directory, removed at the end)
#   VERIFY=1       also run `dainx augment … -split-out` with the cheapest
#                  settings (-method duplication -ratio 0.0001 -epochs 1
#                  -layers N,4) and check that its train/test cells are
#                  exactly the ones given to libFM (DAINX=path, default
#                  ./dainx, built with `make build`)
#   GO=go          the go command (default scripts/go)
#   NICE=10        niceness of the libFM runs
set -euo pipefail

peer=libfm
# shellcheck source-path=SCRIPTDIR source=../peer.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peer.sh" # peer_args, peer_source, verify, rmse, …
peer_args "$@"

method="${METHOD:-mcmc}" dim="${DIM:-1,1,32}" iter="${ITER:-200}"
libfm_seed="${LIBFM_SEED:-1}" meta="${META:-0}" init_stdev="${INIT_STDEV:-}"

# --- tools -----------------------------------------------------------------
need_build_tools() {
	command -v make >/dev/null && command -v g++ >/dev/null && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "run.sh: installing make and g++ (apt-get)" >&2
		apt-get install -y make g++ >&2 || { apt-get update >&2 && apt-get install -y make g++ >&2; }
	else
		echo "run.sh: libFM needs make and g++: apt-get install make g++" >&2
		exit 1
	fi
}

# --- libFM source, commit and build ----------------------------------------
peer_source https://github.com/srendle/libfm
build="$cache/build-$commit"
libfm="$build/bin/libFM"
if ! peer_clean_commit || [ ! -x "$libfm" ]; then
	need_build_tools
	echo "run.sh: building libFM $commit in $build" >&2
	peer_copy_src "$build"
	make -C "$build" libFM >"$build/build.log" 2>&1 || {
		tail -20 "$build/build.log" >&2
		echo "run.sh: building libFM failed (log: $build/build.log)" >&2
		exit 1
	}
fi
[ -x "$libfm" ] || { echo "run.sh: no $libfm after the build" >&2; exit 1; }

# --- the runs ----------------------------------------------------------------
peer_prepare
for seed in $seeds; do
	dir="$work/seed$seed"
	peer_split "$dir" "$seed"
	args=(-task r -method "$method" -dim "$dim" -iter "$iter"
		-train "$dir/train.libfm" -test "$dir/test.libfm" -out "$dir/pred.txt")
	if [ "$libfm_seed" != none ]; then args+=(-seed "$libfm_seed"); fi
	if [ "$meta" = 1 ]; then args+=(-meta "$dir/meta.txt"); fi
	if [ -n "$init_stdev" ]; then args+=(-init_stdev "$init_stdev"); fi
	echo "run.sh: seed $seed: libFM ${args[*]}" >&2
	t0="$(date +%s.%N)"
	nice -n "$nice_n" "$libfm" "${args[@]}" >"$dir/libfm.log" 2>&1 || {
		tail -20 "$dir/libfm.log" >&2
		echo "run.sh: libFM failed (seed $seed)" >&2
		exit 1
	}
	secs="$(peer_since "$t0")"
	r="$(rmse "$dir/pred.txt" "$dir/test.libfm")" || exit 1
	printed="$(grep -o 'Test=[0-9.e+-]*' "$dir/libfm.log" | tail -n1 | cut -d= -f2)"
	line="$(peer_json_head "$seed")"
	line+=",\"rmse\":$r,\"libfm_printed_rmse\":${printed:-null},\"seconds\":$secs"
	line+=",\"method\":\"$method\",\"dim\":\"$dim\",\"iter\":$iter"
	if [ "$libfm_seed" = none ]; then line+=",\"libfm_seed\":null"; else line+=",\"libfm_seed\":$libfm_seed"; fi
	if [ "$meta" = 1 ]; then line+=",\"meta\":true"; else line+=",\"meta\":false"; fi
	if [ -n "$init_stdev" ]; then line+=",\"init_stdev\":$init_stdev"; fi
	line+=",\"libfm_commit\":\"$commit\"$(peer_json_tail)"
	peer_emit "$line"
done
