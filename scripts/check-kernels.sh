#!/usr/bin/env bash
# check-kernels.sh: the kernel checks CI runs on a machine with no GPU
# (`make check-kernels`). From the repository root, it checks that
#   1. every kernels/*.cu compiles to PTX (scripts/build-kernels.sh);
#   2. ptxas accepts each PTX for sm_90 (H100), and reports registers,
#      shared memory and spills per kernel;
#   3. the committed kernels/ptx/*.ptx are byte for byte what step 1
#      produced, with no PTX left over from a deleted kernel;
#   4. the generated launchers cuda/k_*.go are up to date, and the kernel
#      file conventions hold (go run ./cuda/internal/kernelgen -check).
# It exits non-zero on the first failing step, saying what to run.
set -euo pipefail

NVCC=${NVCC:-nvcc}
PTXAS=${PTXAS:-ptxas}
ARCH=${PTXAS_ARCH:-sm_90}

for tool in "$NVCC" "$PTXAS"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "check-kernels: $tool not found; run scripts/install-cuda-toolkit.sh" >&2
		exit 1
	fi
done
echo "check-kernels: $("$NVCC" --version | tail -n 1)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. compile
NVCC=$NVCC scripts/build-kernels.sh "$tmp"

# 2. ptxas
fail=0
for ptx in "$tmp"/*.ptx; do
	name=$(basename "$ptx" .ptx)
	if ! info=$("$PTXAS" -arch="$ARCH" -v -o /dev/null "$ptx" 2>&1); then
		echo "$info" >&2
		echo "check-kernels: ptxas -arch=$ARCH rejects kernels/$name.cu" >&2
		fail=1
		continue
	fi
	regs=$(echo "$info" | sed -n 's/.*Used \([0-9]*\) registers.*/\1/p')
	smem=$(echo "$info" | sed -n 's/.*registers, \([0-9]*\) bytes smem.*/\1/p')
	spill=$(echo "$info" | sed -n 's/.*\([0-9][0-9]*\) bytes spill stores.*/\1/p')
	printf '  %-22s %3s registers  %6s bytes smem  %s bytes spilled\n' "$name" "$regs" "${smem:-0}" "${spill:-0}"
	if [ "${spill:-0}" != "0" ]; then
		echo "check-kernels: warning: $name spills registers on $ARCH" >&2
	fi
done
[ "$fail" = 0 ] || exit 1

# 3. committed PTX up to date
if ! diff -r -q "$tmp" kernels/ptx --exclude='*.go' >/dev/null; then
	diff -r -q "$tmp" kernels/ptx --exclude='*.go' >&2 || true
	echo "check-kernels: kernels/ptx is stale; run \`make kernels\` and commit the result" >&2
	exit 1
fi

# 4. launchers and conventions
go run ./cuda/internal/kernelgen -check
echo "check-kernels: $(ls "$tmp"/*.ptx | wc -l) kernels OK for $ARCH"
