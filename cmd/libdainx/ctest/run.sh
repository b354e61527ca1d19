#!/usr/bin/env bash
# run.sh: the C API tests and the C example, on the CPU (`make test-lib`).
# Needs ./dainx, build/lib/libdainx.so and build/include/dainx.h (make build
# lib) and a C compiler. It makes a small synthetic tensor, runs the binary
# on it with seeds 7 and 8, then capi_test.c, which compares dainx_augment
# with those runs, feeds it every kind of bad input, calls it from two
# threads at once and checks the host's signal handlers; then builds
# examples/c/augment.c through pkg-config and runs it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

./dainx synth -dims 40,40,40 -nnz 4000 -rank 3 -seed 3 -output "$tmp/t.tsv" >/dev/null
flags7=(-seed 7 -layers 48,16 -epochs 3 -ratio 0.5 -backend cpu -quiet)
flags8=(-seed 8 -layers 48,16 -epochs 3 -ratio 0.3 -backend cpu -quiet -method random)
opts7='{"seed":7,"layers":"48,16","epochs":3,"ratio":0.5,"backend":"cpu","quiet":true}'
opts8='{"seed":8,"layers":"48,16","epochs":3,"ratio":0.3,"backend":"cpu","quiet":true,"method":"random"}'
./dainx augment -input "$tmp/t.tsv" "${flags7[@]}" -output "$tmp/bin7.tsv" -report "$tmp/bin7.json" >/dev/null
./dainx augment -input "$tmp/t.tsv" "${flags8[@]}" -output "$tmp/bin8.tsv" >/dev/null

export PKG_CONFIG_PATH="$PWD/build/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
$CC -std=c11 -O1 -Wall -Wextra -Werror -pthread cmd/libdainx/ctest/capi_test.c \
	$(pkg-config --cflags --libs dainx) -lm -Wl,-rpath,"$PWD/build/lib" -o "$tmp/capi_test"
"$tmp/capi_test" "$tmp/t.tsv" "$opts7" "$tmp/bin7.tsv" "$tmp/bin7.json" "$opts8" "$tmp/bin8.tsv" "$tmp"

# The header compiles as C++ too.
if command -v c++ >/dev/null 2>&1; then
	echo '#include <dainx.h>
int main() { return dainx_result_count(nullptr) != 0; }' >"$tmp/h.cc"
	c++ -std=c++11 -Wall -Werror $(pkg-config --cflags dainx) -c "$tmp/h.cc" -o "$tmp/h.o"
	echo "ok   dainx.h compiles as C++"
fi

# The C example, compiled through pkg-config as the README says.
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Werror examples/c/augment.c $(pkg-config --cflags --libs dainx) \
	-Wl,-rpath,"$PWD/build/lib" -o "$tmp/augment"
"$tmp/augment" "$tmp/t.tsv" "$opts7" "$tmp/ex.tsv"
cmp "$tmp/ex.tsv" "$tmp/bin7.tsv"
echo "ok   examples/c/augment.c: its new cells are the binary's, byte for byte"
