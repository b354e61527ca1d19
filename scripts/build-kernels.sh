#!/usr/bin/env bash
# build-kernels.sh OUTDIR [kernels/NAME.cu ...]
#
# Compiles each kernel source (default: every kernels/*.cu) to PTX with
#   nvcc -arch=compute_80 -O3 -lineinfo --ptx
# (no global fast-math) and writes OUTDIR/NAME.ptx, filtered so that the
# output is the same on every machine and friendly to git history:
#   - comment lines are removed (nvcc's banner names the build host's
#     toolkit build; mumax3's filterptx: "they spoil the git history");
#   - source paths in .file directives are made relative to the repository
#     root (kernels/NAME.cu instead of /home/…/kernels/NAME.cu).
# Run from the repository root. Used by `make kernels` (OUTDIR=kernels/ptx)
# and by scripts/check-kernels.sh (OUTDIR=a temporary directory).
set -euo pipefail

NVCC=${NVCC:-nvcc}
NVCCFLAGS=${NVCCFLAGS:--arch=compute_80 -O3 -lineinfo}

if [ $# -lt 1 ]; then
	echo "usage: $0 OUTDIR [kernels/NAME.cu ...]" >&2
	exit 2
fi
out=$1
shift
if ! command -v "$NVCC" >/dev/null 2>&1; then
	echo "build-kernels: $NVCC not found; run scripts/install-cuda-toolkit.sh" >&2
	exit 1
fi
if [ $# -eq 0 ]; then
	set -- kernels/*.cu
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for src in "$@"; do
	name=$(basename "$src" .cu)
	# shellcheck disable=SC2086
	"$NVCC" $NVCCFLAGS --ptx -o "$tmp/$name.ptx" "$src"
	sed -E \
		-e '/^[[:space:]]*\/\//d' \
		-e 's#^([[:space:]]*\.file[[:space:]]+[0-9]+[[:space:]]+")[^"]*/(kernels/[^"]*")#\1\2#' \
		"$tmp/$name.ptx" >"$out/$name.ptx"
done
