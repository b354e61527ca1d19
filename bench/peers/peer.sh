# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables set here are read by the run.sh that sources this file
#
# bench/peers/peer.sh: the shell code that bench/peers/libfm/run.sh and
# bench/peers/myfm/run.sh share (issue 51). Not a script of its own: each
# run.sh sets `peer` (its name: libfm, myfm), turns on `set -euo pipefail`
# and sources this file, then calls, in this order,
#
#   peer_args "$@"          the flags (dainx's names and defaults), -h
#   peer_source DEFAULT_REPO  the peer's source tree and commit
#   (its own build, with peer_clean_commit and peer_copy_src)
#   peer_prepare            the work directory, libfmdata, the cpu
#   for seed in $seeds; do
#     peer_split "$work/seed$seed" "$seed"   the seed's cells (and VERIFY=1)
#     (its own run, timed with peer_since; its RMSE with rmse)
#     line="$(peer_json_head "$seed")…$(peer_json_tail)"; peer_emit "$line"
#   done
#
# The messages keep the "run.sh: " prefix of the scripts they come from.
# Environment read here (the headers of the two run.sh scripts describe it):
#   <PEER>_SRC, <PEER>_REPO, <PEER>_REF, <PEER>_COMMIT, <PEER>_CACHE (<PEER>
#   is $peer in capitals: LIBFM_SRC, MYFM_SRC, …), XDG_CACHE_HOME, SEEDS,
#   WORK, VERIFY, DAINX, GO, NICE, TMPDIR.
# Check with `shellcheck -x bench/peers/peer.sh bench/peers/*/run.sh`.

# shellcheck disable=SC2154 # peer: set by the run.sh
: "${peer:?run.sh: set peer before sourcing bench/peers/peer.sh}"
# root: the repository's root (this file is bench/peers/peer.sh).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# nice_n: the niceness of everything heavy (the split writer's build,
# dainx under VERIFY=1, the peer's runs); go_cmd: the go command.
nice_n="${NICE:-10}"
go_cmd="${GO:-$root/scripts/go}"

# peer_args "$@": the command line. Sets input, split (legacy|keyed,
# default keyed), seeds (-seeds or -seed, else $SEEDS, else 1), testfrac
# (0.1), valfrac (0.2), base (-index-base, -1), format (empty: by the
# input's extension) and out (empty: no file). -h prints the header comment
# of the calling script ($0: its lines 2 up to `set -euo pipefail`) and
# exits 0; an unknown flag, no -input, an unreadable input or another
# -split exits 2.
peer_args() {
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
}

# peer_env NAME: the value of the environment variable ${peer^^}_NAME
# (LIBFM_NAME, MYFM_NAME), "" when unset.
peer_env() {
	local v="${peer^^}_$1"
	printf '%s' "${!v:-}"
}

# peer_source DEFAULT_REPO: the peer's source tree, never vendored. With
# P=${peer^^} (LIBFM, MYFM) it sets
#   cache    $P_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/dainx-$peer
#            (created);
#   src      $P_SRC when set (used as it is), else $cache/src: a
#            `git clone` of $P_REPO (default DEFAULT_REPO), made once, at
#            $P_REF when that is set;
#   commit   src's git commit (with "-dirty" when tracked files are
#            changed) when src is the top of a git tree, else $P_COMMIT,
#            else "unknown";
#   version  `git describe --tags` of src ("" when none).
peer_source() {
	local p="${peer^^}" repo ref
	cache="$(peer_env CACHE)"
	cache="${cache:-${XDG_CACHE_HOME:-$HOME/.cache}/dainx-$peer}"
	mkdir -p "$cache"
	src="$(peer_env SRC)"
	if [ -n "$src" ]; then
		src="$(cd "$src" && pwd)"
	else
		src="$cache/src"
		if [ ! -d "$src/.git" ]; then
			repo="$(peer_env REPO)"
			repo="${repo:-$1}"
			echo "run.sh: cloning $repo into $src (needs the network; or set ${p}_SRC or ${p}_REPO)" >&2
			rm -rf "$src"
			git clone --quiet "$repo" "$src" >&2
		fi
		ref="$(peer_env REF)"
		if [ -n "$ref" ]; then
			git -C "$src" checkout --quiet "$ref"
		fi
	fi
	version=""
	if commit="$(git -C "$src" rev-parse HEAD 2>/dev/null)" && [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ]; then
		version="$(git -C "$src" describe --tags 2>/dev/null || true)"
		if [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
			commit="$commit-dirty"
		fi
	else
		commit="$(peer_env COMMIT)"
		commit="${commit:-unknown}"
	fi
}

# peer_clean_commit: whether commit names a clean commit, so that a build
# made from it earlier can be used again (an unknown or dirty tree is
# always built afresh).
peer_clean_commit() {
	[ "$commit" != unknown ] && [[ "$commit" != *-dirty ]]
}

# peer_copy_src DIR: DIR, emptied, gets a copy of src without its .git (the
# peer is built there, so src stays clean).
peer_copy_src() {
	rm -rf "$1"
	mkdir -p "$1"
	(cd "$src" && tar --exclude=.git -cf - .) | (cd "$1" && tar xf -)
}

# peer_prepare: sets work ($WORK, created, else a temporary directory
# removed at exit), builds the split writer bench/peers/libfm/libfmdata into
# $work/libfmdata and sets cpu (lscpu's model name, "" when unknown).
peer_prepare() {
	if [ -n "${WORK:-}" ]; then
		work="$WORK"
		mkdir -p "$work"
	else
		work="$(mktemp -d "${TMPDIR:-/tmp}/dainx-$peer.XXXXXX")"
		trap 'rm -rf "$work"' EXIT
	fi
	(cd "$root" && nice -n "$nice_n" "$go_cmd" build -o "$work/libfmdata" ./bench/peers/libfm/libfmdata)
	cpu="$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)"
}

# peer_split DIR SEED: writes the training, validation and test cells of
# dainx's split SEED of the input into DIR (created) with libfmdata:
# train.libfm, val.libfm, test.libfm, meta.txt and split.json (its JSON:
# dims, offsets, the part sizes). With VERIFY=1 checks them (verify). Sets
# n_train, n_val and n_test.
peer_split() {
	local dir="$1" seed="$2" fmt=()
	mkdir -p "$dir"
	if [ -n "$format" ]; then fmt=(-format "$format"); fi
	"$work/libfmdata" -input "$input" "${fmt[@]}" -index-base "$base" -split "$split" -seed "$seed" \
		-test-frac "$testfrac" -val-frac "$valfrac" -out "$dir" >"$dir/split.json"
	if [ "${VERIFY:-0}" = 1 ]; then verify "$dir" "$seed"; fi
	n_train="$(sed -n 's/.*"n_train":\([0-9]*\).*/\1/p' "$dir/split.json")"
	n_val="$(sed -n 's/.*"n_val":\([0-9]*\).*/\1/p' "$dir/split.json")"
	n_test="$(sed -n 's/.*"n_test":\([0-9]*\).*/\1/p' "$dir/split.json")"
}

# verify DIR SEED: runs `dainx augment … -split-out` (DAINX, default
# ./dainx, under nice) with the cheapest settings (-method duplication
# -ratio 0.0001 -epochs 1 -layers N,4) and checks that its cells (tsv, one
# line per cell: the indices then the value) are DIR's libFM files' cells,
# value for value and in the same order; exits 1 when not. Its split-out
# directory (DIR/split-out) is removed afterwards.
verify() {
	local dir="$1" seed="$2" dainx="${DAINX:-$root/dainx}" so="$1/split-out" offsets order b part
	[ -x "$dainx" ] || { echo "run.sh: VERIFY=1 needs $dainx (make build)" >&2; exit 1; }
	offsets="$(sed -n 's/.*"offsets":\[\([0-9,]*\)\].*/\1/p' "$dir/split.json")"
	order="$(awk -F, '{print NF}' <<<"$offsets")"
	mkdir -p "$so"
	local fmt=()
	if [ -n "$format" ]; then fmt=(-format "$format"); fi
	nice -n "$nice_n" "$dainx" augment -input "$input" "${fmt[@]}" -index-base "$base" -split "$split" -seed "$seed" \
		-test-frac "$testfrac" -val-frac "$valfrac" -split-out "$so" \
		-method duplication -ratio 0.0001 -epochs 1 -layers "$order,4" -backend cpu -quiet >/dev/null
	# -split-out writes in the input's index base (-1: the format's own: 1
	# for tns, 0 for tsv and bin).
	b="$base"
	if [ "$b" = -1 ]; then
		case "${format:-$input}" in *tns | *.tns.gz) b=1 ;; *) b=0 ;; esac
	fi
	for part in train val test; do
		if ! cmp -s \
			<(awk -v offs="$offsets" -v b="$b" 'BEGIN { n = split(offs, o, ",") }
				{ printf "%.17g", $(n + 1); for (i = 1; i <= n; i++) printf " %d:1", o[i] + $i - b; printf "\n" }' "$so/$part.tsv") \
			<(awk '{ $1 = sprintf("%.17g", $1); print }' "$dir/$part.libfm"); then
			echo "run.sh: VERIFY: $part cells differ from dainx augment -split-out's (seed $seed)" >&2
			exit 1
		fi
	done
	rm -rf "$so"
	echo "run.sh: VERIFY: seed $seed: train, val and test cells identical to dainx augment -split-out's" >&2
}

# peer_since T0: the seconds since T0 (a `date +%s.%N`), to 0.1 s.
peer_since() {
	local t1
	t1="$(date +%s.%N)"
	awk -v a="$1" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}

# rmse PRED LIBFMFILE: the RMSE of the predictions against the targets
# (the first field of each libFM line), line by line, to 6 decimals; fails
# with a message when the two do not match line for line.
rmse() {
	paste -d' ' "$1" <(cut -d' ' -f1 "$2") | awk '
		NF != 2 { bad = 1; exit }
		{ d = $1 - $2; s += d * d; n++ }
		END { if (bad || n == 0) exit 1; printf "%.6f", sqrt(s / n) }' ||
		{ echo "run.sh: predictions do not match the test cells" >&2; return 1; }
}

# json_str S: S as a JSON string.
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }

# peer_json_head SEED: the start of a seed's JSON line, the fields both
# peers have first: {"peer", "tensor", "split", "seed", "test_frac",
# "val_frac", "n_train", "n_val", "n_test" (no closing brace).
peer_json_head() {
	printf '{"peer":"%s","tensor":%s,"split":"%s","seed":%s' "$peer" "$(json_str "$input")" "$split" "$1"
	printf ',"test_frac":%s,"val_frac":%s,"n_train":%s,"n_val":%s,"n_test":%s' "$testfrac" "$valfrac" "$n_train" "$n_val" "$n_test"
}

# peer_json_tail: the end of a JSON line: ,"cpu", "date" (now, UTC) and }.
peer_json_tail() {
	printf ',"cpu":%s,"date":"%s"}' "$(json_str "$cpu")" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# peer_emit LINE: prints LINE, and appends it to -out's file when given.
peer_emit() {
	echo "$1"
	if [ -n "$out" ]; then echo "$1" >>"$out"; fi
}
