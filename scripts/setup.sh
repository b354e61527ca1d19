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
	curl -fsSL -o "$zip" "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-${ver}.linux-amd64.zip"
	rm -rf "$HOME/sdk/tmp" && mkdir -p "$HOME/sdk/tmp"
	python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$HOME/sdk/tmp"
	rm -rf "$HOME/sdk/go"
	mv "$HOME/sdk/tmp/golang.org/toolchain@v0.0.1-${ver}.linux-amd64" "$HOME/sdk/go"
	chmod -R u+x "$HOME/sdk/go/bin" "$HOME/sdk/go/pkg/tool"
	rm -rf "$HOME/sdk/tmp" "$zip"
fi
echo "setup: $(go version)"
go mod download
go build -o dainx ./cmd/dainx
echo "setup: built ./dainx"
