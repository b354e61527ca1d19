#!/usr/bin/env bash
# install-cuda-toolkit.sh installs nvcc and ptxas from Debian's non-free
# nvidia-cuda-toolkit (CUDA 11.8 on bookworm) on a machine with no GPU, so
# that `make kernels` and `make check-kernels` can run. It is idempotent: it
# does nothing when nvcc is already on PATH, and adds the contrib, non-free
# and non-free-firmware components to the apt sources only where missing.
# It needs root (or sudo). Used by CI (.ci/run) and by developers.
set -euo pipefail

if command -v nvcc >/dev/null 2>&1 && command -v ptxas >/dev/null 2>&1; then
	echo "install-cuda-toolkit: $(nvcc --version | tail -n 1) already installed"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

want="main contrib non-free non-free-firmware"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
	# deb822 format: rewrite each "Components:" line that lacks non-free.
	if grep -q '^Components:' /etc/apt/sources.list.d/debian.sources &&
		grep '^Components:' /etc/apt/sources.list.d/debian.sources | grep -vq 'non-free'; then
		$SUDO sed -i -E "/^Components:/{/non-free/!s/^Components:.*/Components: $want/}" \
			/etc/apt/sources.list.d/debian.sources
	fi
elif [ -f /etc/apt/sources.list ]; then
	# one-line format: append the components to every debian line without them.
	$SUDO sed -i -E '/^deb .*debian/{/non-free/!s/$/ contrib non-free non-free-firmware/}' \
		/etc/apt/sources.list
else
	echo "install-cuda-toolkit: no Debian apt sources found" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
nvcc --version | tail -n 1
