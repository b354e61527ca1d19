#!/usr/bin/env bash
# setup.sh makes a fresh Linux amd64 machine ready to build and test dainx:
# it finds Go (≥ the version go.mod names) or installs it from the Go
# module proxy's toolchain zip (the same source as GOTOOLCHAIN=auto), then
# downloads the modules and builds ./dainx. Idempotent.
#
# Use it as `source scripts/setup.sh` to keep Go on PATH in your shell, or
# `bash scripts/setup.sh` to just build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ensure CMD PKG...: install the Debian packages PKG... when CMD is missing (a fresh
# machine may lack make, curl or unzip); fails with a clear message where
# apt-get or root rights are missing.
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

want=$(awk '/^go /{print $2}' go.mod)
export PATH="/usr/local/go/bin:$HOME/sdk/go/bin:$HOME/go/bin:$PATH"

have_go() {
	command -v go >/dev/null 2>&1 || return 1
	local v
	v=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
	[ -n "$v" ] && [ "$(printf '%s\n%s\n' "$want" "$v" | sort -V | head -n1)" = "$want" ]
}

if ! have_go; then
	ver="go${want}"
	[[ "$want" =~ ^[0-9]+\.[0-9]+$ ]] && ver="go${want}.0"
	zip="/tmp/${ver}.linux-amd64.zip"
	echo "setup: installing $ver into \$HOME/sdk/go from proxy.golang.org"
	url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-${ver}.linux-amd64.zip"
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL -o "$zip" "$url"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$zip" "$url"
	else
		ensure curl curl ca-certificates && curl -fsSL -o "$zip" "$url"
	fi
	rm -rf "$HOME/sdk/tmp" && mkdir -p "$HOME/sdk/tmp"
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$HOME/sdk/tmp"
	else
		ensure unzip unzip && unzip -q "$zip" -d "$HOME/sdk/tmp"
	fi
	rm -rf "$HOME/sdk/go"
	mv "$HOME/sdk/tmp/golang.org/toolchain@v0.0.1-${ver}.linux-amd64" "$HOME/sdk/go"
	chmod -R u+x "$HOME/sdk/go/bin" "$HOME/sdk/go/pkg/tool"
	rm -rf "$HOME/sdk/tmp" "$zip"
fi
echo "setup: $(go version)"
go mod download
go build -o dainx ./cmd/dainx
echo "setup: built ./dainx"
