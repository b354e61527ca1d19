#!/usr/bin/env bash
# bench/peers/myfm/run.sh: myFM (T. Ohtsuki, github.com/tohtsky/myFM, Bayesian
# factorization machines by Gibbs sampling) as a second external peer beside
# libFM, on dainx's own splits (issue 51). Not part of `make test`.
#
#   bench/peers/myfm/run.sh -input TENSOR [-split legacy|keyed] [-seeds "1 2 3"]
#                           [-test-frac 0.1] [-val-frac 0.2] [-index-base -1]
#                           [-format tsv|tns|bin] [-out results.jsonl]
#
# For each seed it
#   1. writes the training, validation and test cells of dainx's split of
#      TENSOR with libFM's writer, bench/peers/libfm/libfmdata (the cells
#      `dainx augment -split S -seed N -split-out DIR` writes, and the very
#      files bench/peers/libfm/run.sh gives libFM);
#   2. runs run_myfm.py (next to this script): the cells' one-hot features
#      (each mode's index, concatenated) as a scipy.sparse CSR matrix,
#      myfm.MyFMRegressor(rank=32, random_seed=1).fit(training cells,
#      n_iter=200, n_kept_samples=200, group_shapes=the modes' sizes), then
#      predict on the test cells (the validation cells are not used);
#   3. computes the test RMSE of the predictions and prints one JSON line
#      (also appended to -out FILE when given).
#
# myFM itself is read and built here, never vendored:
#   MYFM_SRC=DIR    use this myFM source tree (copied before building);
#   otherwise       `git clone $MYFM_REPO` (default
#                   https://github.com/tohtsky/myFM: needs the network)
#                   into $MYFM_CACHE/src, once.
#   MYFM_REF        commit or tag to build (default: the clone's HEAD).
#   MYFM_COMMIT     the commit to record when MYFM_SRC is not a git tree.
#   MYFM_CACHE      default ${XDG_CACHE_HOME:-$HOME/.cache}/dainx-myfm; the
#                   build goes to $MYFM_CACHE/build-<commit>-py<X.Y>/src
#                   (myFM's Python package with its compiled _myfm module).
# The build needs no network: myFM's setup.py is run with `build_ext
# --inplace` and EIGEN3_INCLUDE_DIR pointing at Debian's Eigen headers (it
# downloads Eigen only when that is unset), pybind11 from Debian. Needed
# (apt-get install; done here when running as root on Debian/Ubuntu and
# they are missing): g++ python3-dev python3-numpy python3-scipy
# python3-pandas python3-tqdm python3-typing-extensions python3-setuptools
# python3-pkg-resources python3-pybind11 pybind11-dev libeigen3-dev. It
# takes about 35 s.
#   PYTHON          the Python with those packages (default /usr/bin/python3,
#                   Debian's, when it exists, else python3)
#   EIGEN3_INCLUDE_DIR  default /usr/include/eigen3
#
# myFM settings (environment):
#   RANK=32 ITER=200      MyFMRegressor's rank and fit's n_iter (Gibbs sweeps)
#   N_KEPT=               fit's n_kept_samples: the last N_KEPT sweeps are
#                         averaged for the prediction; default ITER (all of
#                         them, as libFM MCMC); 0: myFM's default (ITER - 5)
#   MYFM_SEED=1           MyFMRegressor's random_seed
#   MYFM_GROUPS=per-mode  fit's group_shapes: one prior group per mode (as
#                         libFM's -meta); "one": a single group (myFM's
#                         default, libFM without -meta)
#   INIT_STDEV=0.1        MyFMRegressor's init_stdev (its default)
# Other:
#   SEEDS="1 2 3"  the split seeds, when -seeds is not given (default 1)
#   WORK=DIR       keep the data files, predictions and logs here (default:
#                  a temporary directory, removed at the end)
#   VERIFY=1       also run `dainx augment … -split-out` with the cheapest
#                  settings and check that its train/val/test cells are
#                  exactly the ones given to myFM (DAINX=path, default
#                  ./dainx, built with `make build`)
#   GO=go          the go command (default scripts/go)
#   NICE=10        niceness of the build and the myFM runs
set -euo pipefail

peer=myfm
# shellcheck source-path=SCRIPTDIR source=../peer.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peer.sh" # peer_args, peer_source, verify, rmse, …
peer_args "$@"
here="$root/bench/peers/myfm"

rank="${RANK:-32}" iter="${ITER:-200}" n_kept="${N_KEPT:-$iter}" myfm_seed="${MYFM_SEED:-1}"
groups="${MYFM_GROUPS:-per-mode}" init_stdev="${INIT_STDEV:-0.1}"
case "$groups" in per-mode | one) ;; *) echo "run.sh: MYFM_GROUPS=$groups: want per-mode or one" >&2; exit 2 ;; esac
if [ -z "${PYTHON:-}" ]; then
	if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
eigen="${EIGEN3_INCLUDE_DIR:-/usr/include/eigen3}"

# --- tools -----------------------------------------------------------------
debs=(g++ python3-dev python3-numpy python3-scipy python3-pandas python3-tqdm python3-typing-extensions
	python3-setuptools python3-pkg-resources python3-pybind11 pybind11-dev libeigen3-dev)
have_build_tools() {
	command -v g++ >/dev/null && [ -r "$eigen/Eigen/Core" ] &&
		"$PYTHON" -c 'import numpy, scipy, pandas, tqdm, typing_extensions, setuptools, pkg_resources, pybind11, sysconfig, os, sys
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' 2>/dev/null
}
need_build_tools() {
	have_build_tools && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "$PYTHON" = /usr/bin/python3 ]; then
		echo "run.sh: installing ${debs[*]} (apt-get)" >&2
		apt-get install -y "${debs[@]}" >&2 || { apt-get update >&2 && apt-get install -y "${debs[@]}" >&2; }
	fi
	have_build_tools || {
		echo "run.sh: building myFM needs g++, Eigen headers in $eigen and, for $PYTHON, its headers and" >&2
		echo "        numpy scipy pandas tqdm typing_extensions setuptools pkg_resources pybind11:" >&2
		echo "        apt-get install ${debs[*]}" >&2
		exit 1
	}
}

# --- myFM source, commit and build -----------------------------------------
peer_source https://github.com/tohtsky/myFM
pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
build="$cache/build-$commit-py$pyver"
can_import() { PYTHONPATH="$build/src" "$PYTHON" -c 'import myfm; myfm.MyFMRegressor' 2>/dev/null; }
if ! peer_clean_commit || ! can_import; then
	need_build_tools
	echo "run.sh: building myFM $commit for $PYTHON in $build" >&2
	peer_copy_src "$build"
	# EIGEN3_INCLUDE_DIR: setup.py takes Eigen from there instead of downloading it.
	# SETUPTOOLS_SCM_PRETEND_VERSION: the copy has no .git for setuptools_scm (when installed).
	(cd "$build" && EIGEN3_INCLUDE_DIR="$eigen" SETUPTOOLS_SCM_PRETEND_VERSION="${version:-0.0.0}" \
		nice -n "$nice_n" "$PYTHON" setup.py build_ext --inplace) >"$build/build.log" 2>&1 || {
		tail -20 "$build/build.log" >&2
		echo "run.sh: building myFM failed (log: $build/build.log)" >&2
		exit 1
	}
	can_import || {
		PYTHONPATH="$build/src" "$PYTHON" -c 'import myfm' >&2 || true
		echo "run.sh: cannot import myfm from $build/src after the build" >&2
		exit 1
	}
fi

# --- the runs ----------------------------------------------------------------
# field NAME JSON: the value of a scalar field of a flat JSON object.
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2"; }

peer_prepare
for seed in $seeds; do
	dir="$work/seed$seed"
	peer_split "$dir" "$seed"
	rm -f "$dir/val.libfm" # not used: myFM is trained on the training cells alone
	args=(-dir "$dir" -rank "$rank" -n-iter "$iter" -n-kept "$n_kept" -seed "$myfm_seed"
		-init-stdev "$init_stdev" -groups "$groups" -pred "$dir/pred.txt")
	echo "run.sh: seed $seed: run_myfm.py ${args[*]}" >&2
	t0="$(date +%s.%N)"
	PYTHONPATH="$build/src" nice -n "$nice_n" "$PYTHON" "$here/run_myfm.py" "${args[@]}" >"$dir/myfm.json" 2>"$dir/myfm.log" || {
		tail -20 "$dir/myfm.log" >&2
		echo "run.sh: myFM failed (seed $seed)" >&2
		exit 1
	}
	secs="$(peer_since "$t0")"
	r="$(rmse "$dir/pred.txt" "$dir/test.libfm")" || exit 1
	res="$(cat "$dir/myfm.json")"
	line="$(peer_json_head "$seed")"
	line+=",\"rmse\":$r,\"myfm_printed_rmse\":$(field rmse "$res"),\"seconds\":$secs,\"fit_seconds\":$(field fit_seconds "$res")"
	line+=",\"method\":\"gibbs\",\"rank\":$rank,\"n_iter\":$iter,\"n_kept_samples\":$(field n_kept_samples "$res")"
	line+=",\"myfm_seed\":$myfm_seed,\"init_stdev\":$init_stdev"
	if [ "$groups" = per-mode ]; then
		line+=",\"group_shapes\":\"per mode\",\"group_sizes\":[$(sed -n 's/.*"dims":\[\([0-9,]*\)\].*/\1/p' "$dir/split.json")],\"meta\":true"
	else
		line+=",\"group_shapes\":\"one group\",\"meta\":false"
	fi
	line+=",\"myfm_commit\":\"$commit\",\"myfm_version\":$(json_str "$version"),\"python\":\"$pyver\"$(peer_json_tail)"
	peer_emit "$line"
done
