#!/usr/bin/env bash
# device-bundle.sh: build everything one call of the GPU machine needs into
# the git-ignored folder .dev/, which the device tool carries beside the
# working tree (the GPU machine has no Go and no network). Run from the
# repository root (`make device-bundle`). Builds with CGO_ENABLED=0.
#
#   .dev/dainx                    the CLI (skipped, with a message, if
#                                 ./cmd/dainx does not build yet)
#   .dev/cuda.test                conformance suite on the CUDA backend
#   .dev/cuda_driver.test         driver binding tests
#   .dev/benchrun                 `make bench` as a binary (GPU and CPU rows,
#                                 PyTorch peers on the CPU and on the GPU)
#   .dev/data/                    the tensors of the end-to-end runs
#
# The four binaries go into .dev/bin.tar.gz (the PTX they embed compresses
# well: 51 MiB of binaries and data become about 21), which
# scripts/device-run.sh unpacks into .dev/ on the GPU machine first.
#
# Then, on the GPU machine, three calls: PLAN=1, 2 and 3 of
# scripts/device-run.sh (scripts/device-run.sh -h explains them).
# DAINX_DATA overrides where the tensors are read from (default
# ../shared/data, the shared folder beside the checkout).
set -euo pipefail

dev=.dev
data_src=${DAINX_DATA:-../shared/data}
export CGO_ENABLED=0

mkdir -p "$dev/data"
rm -f "$dev"/*.test "$dev/dainx" "$dev/benchrun" "$dev/bin.tar.gz"

if go build -trimpath -ldflags="-s -w" -o "$dev/dainx" ./cmd/dainx 2>"$dev/dainx.build.log"; then
	rm -f "$dev/dainx.build.log"
	echo "device-bundle: $dev/dainx"
else
	echo "device-bundle: ./cmd/dainx does not build (yet); no dainx binary:" >&2
	sed 's/^/  /' "$dev/dainx.build.log" >&2
fi

if go build -trimpath -ldflags="-s -w" -o "$dev/benchrun" ./bench/cmd/benchrun; then
	echo "device-bundle: $dev/benchrun"
else
	echo "device-bundle: ./bench/cmd/benchrun does not build; no benchrun" >&2
fi

status=0
for pkg in ./cuda ./cuda/driver; do
	name=$(echo "${pkg#./}" | tr / _)
	if ! go list "$pkg" >/dev/null 2>&1; then
		echo "device-bundle: $pkg does not exist; skipped" >&2
		continue
	fi
	if ! go test -c -trimpath -ldflags="-s -w" -o "$dev/$name.test" "$pkg"; then
		echo "device-bundle: the tests of $pkg do not build" >&2
		case $pkg in ./cuda | ./cuda/driver) status=1 ;; esac
		continue
	fi
	if [ -f "$dev/$name.test" ]; then
		echo "device-bundle: $dev/$name.test"
	else
		echo "device-bundle: $pkg has no tests; skipped" >&2
	fi
done

for f in movingmnist100.tsv.gz foursquare_nyc.tsv.gz movielens_latest_small.tsv.gz synthetic_10K.tsv; do
	if [ -f "$data_src/$f" ]; then
		install -m 0644 "$data_src/$f" "$dev/data/$f"
	else
		echo "device-bundle: $data_src/$f not found; the runs that need it will be skipped" >&2
	fi
done

# The commit the binaries were built from (the GPU machine has no .git).
c=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	c="$c+dirty"
fi
echo "$c" >"$dev/COMMIT"

bins=()
for f in dainx benchrun cuda.test cuda_driver.test; do
	[ -f "$dev/$f" ] && bins+=("$f")
done
if [ ${#bins[@]} -gt 0 ]; then
	tar czf "$dev/bin.tar.gz" -C "$dev" "${bins[@]}"
	(cd "$dev" && rm -f "${bins[@]}")
	echo "device-bundle: $dev/bin.tar.gz (${bins[*]})"
fi

du -sh "$dev" | sed 's/^/device-bundle: total /'
size=$(du -sm "$dev" | cut -f1)
if [ "$size" -gt 40 ]; then
	echo "device-bundle: $dev is ${size} MiB, over the 40 MiB budget (the device tool carries at most 64 MiB with the working tree)" >&2
	status=1
fi
exit $status
