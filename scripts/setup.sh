#!/usr/bin/env bash
# setup.sh makes a machine ready to build and test dainx: it finds Go (≥ the
# version go.mod names) or installs it (scripts/go), downloads the modules
# and builds ./dainx. Idempotent. `make demo` and `make test` do the same by
# themselves, so this is only needed to put Go on a shell's PATH:
#
#	source scripts/setup.sh   # Go on PATH in this shell, ./dainx built
#	bash scripts/setup.sh     # just build
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ensure CMD PKG...: install the Debian packages PKG... when CMD is missing
# (a fresh machine may lack make); fails with a clear message where apt-get
# or root rights are missing.
ensure() {
	command -v "$1" >/dev/null 2>&1 && return 0
	local sudo=""
	[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo=sudo
	if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; }; then
		echo "setup: installing ${*:2} (for $1)"
		$sudo apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${@:2}" >/dev/null
	else
		echo "setup: $1 is missing; install ${*:2}" >&2
		return 1
	fi
}

ensure make make
goroot=$(bash scripts/go --goroot)
export PATH="$goroot/bin:$PATH"
export GOTOOLCHAIN=local
echo "setup: $(go version)"
go mod download
go build -o dainx ./cmd/dainx
echo "setup: built ./dainx"
