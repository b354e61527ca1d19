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

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
here="$root/bench/peers/libfm"

input="" split="keyed" seeds="${SEEDS:-1}" testfrac=0.1 valfrac=0.2 base=-1 format="" out=""
while [ $# -gt 0 ]; do
	case "$1" in
	-input) input="$2"; shift 2 ;;
	-split) split="$2"; shift 2 ;;
	-seed | -seeds) seeds="$2"; shift 2 ;;
	-test-frac) testfrac="$2"; shift 2 ;;
	-val-frac) valfrac="$2"; shift 2 ;;
	-index-base) base="$2"; shift 2 ;;
	-format) format="$2"; shift 2 ;;
	-out) out="$2"; shift 2 ;;
	-h | -help | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (see -h)" >&2; exit 2 ;;
	esac
done
[ -n "$input" ] || { echo "run.sh: -input TENSOR is required (see -h)" >&2; exit 2; }
[ -r "$input" ] || { echo "run.sh: cannot read $input" >&2; exit 2; }
case "$split" in legacy | keyed) ;; *) echo "run.sh: -split $split: want legacy or keyed" >&2; exit 2 ;; esac

method="${METHOD:-mcmc}" dim="${DIM:-1,1,32}" iter="${ITER:-200}"
libfm_seed="${LIBFM_SEED:-1}" meta="${META:-0}" init_stdev="${INIT_STDEV:-}"
nice_n="${NICE:-10}"
go_cmd="${GO:-$root/scripts/go}"
cache="${LIBFM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dainx-libfm}"
mkdir -p "$cache"

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
if [ -n "${LIBFM_SRC:-}" ]; then
	src="$(cd "$LIBFM_SRC" && pwd)"
else
	src="$cache/src"
	if [ ! -d "$src/.git" ]; then
		repo="${LIBFM_REPO:-https://github.com/srendle/libfm}"
		echo "run.sh: cloning $repo into $src (needs the network; or set LIBFM_SRC)" >&2
		rm -rf "$src"
		git clone --quiet "$repo" "$src" >&2
	fi
	if [ -n "${LIBFM_REF:-}" ]; then
		git -C "$src" checkout --quiet "$LIBFM_REF"
	fi
fi
if commit="$(git -C "$src" rev-parse HEAD 2>/dev/null)" && [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ]; then
	if [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		commit="$commit-dirty"
	fi
else
	commit="${LIBFM_COMMIT:-unknown}"
fi
build="$cache/build-$commit"
libfm="$build/bin/libFM"
if [ "$commit" = unknown ] || [[ "$commit" == *-dirty ]] || [ ! -x "$libfm" ]; then
	need_build_tools
	echo "run.sh: building libFM $commit in $build" >&2
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$src" && tar --exclude=.git -cf - .) | (cd "$build" && tar xf -)
	make -C "$build" libFM >"$build/build.log" 2>&1 || {
		tail -20 "$build/build.log" >&2
		echo "run.sh: building libFM failed (log: $build/build.log)" >&2
		exit 1
	}
fi
[ -x "$libfm" ] || { echo "run.sh: no $libfm after the build" >&2; exit 1; }

# --- work directory and the split writer -----------------------------------
if [ -n "${WORK:-}" ]; then
	work="$WORK"
	mkdir -p "$work"
else
	work="$(mktemp -d "${TMPDIR:-/tmp}/dainx-libfm.XXXXXX")"
	trap 'rm -rf "$work"' EXIT
fi
(cd "$root" && "$go_cmd" build -o "$work/libfmdata" ./bench/peers/libfm/libfmdata)

# rmse PRED LIBFMFILE: the RMSE of the predictions against the targets
# (the first field of each libFM line), line by line.
rmse() {
	paste -d' ' "$1" <(cut -d' ' -f1 "$2") | awk '
		NF != 2 { bad = 1; exit }
		{ d = $1 - $2; s += d * d; n++ }
		END { if (bad || n == 0) exit 1; printf "%.6f", sqrt(s / n) }'
}

# verify DIR SEED: dainx augment -split-out's cells against DIR's libFM files.
verify() {
	local dir="$1" seed="$2" dainx="${DAINX:-$root/dainx}" so="$1/split-out" offsets order
	[ -x "$dainx" ] || { echo "run.sh: VERIFY=1 needs $dainx (make build)" >&2; exit 1; }
	offsets="$(sed -n 's/.*"offsets":\[\([0-9,]*\)\].*/\1/p' "$dir/split.json")"
	order="$(awk -F, '{print NF}' <<<"$offsets")"
	mkdir -p "$so"
	local fmt=()
	if [ -n "$format" ]; then fmt=(-format "$format"); fi
	"$dainx" augment -input "$input" "${fmt[@]}" -index-base "$base" -split "$split" -seed "$seed" \
		-test-frac "$testfrac" -val-frac "$valfrac" -split-out "$so" \
		-method duplication -ratio 0.0001 -epochs 1 -layers "$order,4" -backend cpu -quiet >/dev/null
	# -split-out writes in the output's index base: the input's (-1: the format's own).
	local b="$base"
	if [ "$b" = -1 ]; then
		case "${format:-$input}" in *tns | *.tns.gz | tns) b=1 ;; *) b=0 ;; esac
	fi
	local part
	for part in train val test; do
		awk -v offs="$offsets" -v b="$b" 'BEGIN { n = split(offs, o, ",") }
			{ printf "%.17g", $(n + 1); for (i = 1; i <= n; i++) printf " %d:1", o[i] + $i - b; printf "\n" }' \
			"$so/$part.tsv" >"$dir/$part.dainx"
		awk '{ $1 = sprintf("%.17g", $1); print }' "$dir/$part.libfm" >"$dir/$part.ours"
		if ! cmp -s "$dir/$part.dainx" "$dir/$part.ours"; then
			echo "run.sh: VERIFY: $part cells differ from dainx augment -split-out's (seed $seed)" >&2
			exit 1
		fi
	done
	echo "run.sh: VERIFY: seed $seed: train, val and test cells identical to dainx augment -split-out's" >&2
}

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }

cpu="$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)"
for seed in $seeds; do
	dir="$work/seed$seed"
	mkdir -p "$dir"
	fmt=()
	if [ -n "$format" ]; then fmt=(-format "$format"); fi
	"$work/libfmdata" -input "$input" "${fmt[@]}" -index-base "$base" -split "$split" -seed "$seed" \
		-test-frac "$testfrac" -val-frac "$valfrac" -out "$dir" >"$dir/split.json"
	if [ "${VERIFY:-0}" = 1 ]; then verify "$dir" "$seed"; fi
	n_train="$(sed -n 's/.*"n_train":\([0-9]*\).*/\1/p' "$dir/split.json")"
	n_val="$(sed -n 's/.*"n_val":\([0-9]*\).*/\1/p' "$dir/split.json")"
	n_test="$(sed -n 's/.*"n_test":\([0-9]*\).*/\1/p' "$dir/split.json")"
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
	t1="$(date +%s.%N)"
	secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
	r="$(rmse "$dir/pred.txt" "$dir/test.libfm")" || { echo "run.sh: predictions do not match the test cells" >&2; exit 1; }
	printed="$(grep -o 'Test=[0-9.e+-]*' "$dir/libfm.log" | tail -n1 | cut -d= -f2)"
	line="{\"peer\":\"libfm\",\"tensor\":$(json_str "$input"),\"split\":\"$split\",\"seed\":$seed"
	line+=",\"test_frac\":$testfrac,\"val_frac\":$valfrac,\"n_train\":$n_train,\"n_val\":$n_val,\"n_test\":$n_test"
	line+=",\"rmse\":$r,\"libfm_printed_rmse\":${printed:-null},\"seconds\":$secs"
	line+=",\"method\":\"$method\",\"dim\":\"$dim\",\"iter\":$iter"
	if [ "$libfm_seed" = none ]; then line+=",\"libfm_seed\":null"; else line+=",\"libfm_seed\":$libfm_seed"; fi
	if [ "$meta" = 1 ]; then line+=",\"meta\":true"; else line+=",\"meta\":false"; fi
	if [ -n "$init_stdev" ]; then line+=",\"init_stdev\":$init_stdev"; fi
	line+=",\"libfm_commit\":\"$commit\",\"cpu\":$(json_str "$cpu"),\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}"
	echo "$line"
	if [ -n "$out" ]; then echo "$line" >>"$out"; fi
done
