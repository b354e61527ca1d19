#!/usr/bin/env bash
# check-kernels-lib.sh LIB: checks libdainx_kernels.a (`make
# check-kernels-lib`, CI, no GPU needed):
#   1. cuobjdump finds, for every kernel of kernels/*.cu, SASS of
#      dainx_kern_NAME for sm_80 and sm_90, and PTX for compute_90;
#   2. every launcher dainx_k_* that dainx_kernels.h declares is defined;
#   3. the archive defines no global symbol outside the dainx_ prefix (C
#      names; C++ ones are namespaced), so `gather` or `adam` cannot clash.
set -euo pipefail
lib=${1:-build/lib/libdainx_kernels.a}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
fail=0

res=$("$CUOBJDUMP" -res-usage "$lib" 2>&1)
for src in kernels/*.cu; do
	k=dainx_kern_$(basename "$src" .cu)
	# The resource listing names each function under "arch = sm_XX" of an
	# ELF section; collect the arches that list this kernel.
	arches=$(echo "$res" | awk -v k="$k" '
		/^Fatbin elf code:/ {elf = 1; next}
		/^Fatbin ptx code:/ {elf = 0; next}
		/^arch = / {arch = $3; next}
		elf && $1 == "Function" && $2 == k":" {print arch}' | sort -u | tr '\n' ' ')
	for a in sm_80 sm_90; do
		if [[ " $arches" != *" $a "* ]]; then
			echo "check-kernels-lib: $k has no $a SASS (found: ${arches:-none})" >&2
			fail=1
		fi
	done
done
elf=$("$CUOBJDUMP" --list-elf "$lib" | grep -c 'sm_80\.cubin' || true)
elf90=$("$CUOBJDUMP" --list-elf "$lib" | grep -c 'sm_90\.cubin' || true)
ptx=$("$CUOBJDUMP" --list-ptx "$lib" | grep -c 'sm_90\.ptx' || true)
nk=$(ls kernels/*.cu | wc -l)
if [ "$ptx" -lt "$nk" ]; then
	echo "check-kernels-lib: $ptx compute_90 PTX images for $nk kernels" >&2
	fail=1
fi

defined=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $2 ~ /^[TDBR]$/ {print $3}')
for f in $(grep -o 'dainx_k_[a-z0-9_]*(' kernels/lib/dainx_kernels.h | tr -d '(' | sort -u); do
	# A here-string, not a pipe: grep -q stops reading at its first match,
	# and under pipefail an echo still writing into the pipe would fail the
	# test (a launcher reported missing that is there).
	if ! grep -qx "$f" <<<"$defined"; then
		echo "check-kernels-lib: $f is declared in dainx_kernels.h but not defined" >&2
		fail=1
	fi
done
stray=$(echo "$defined" | grep -v '^_Z' | grep -v '^dainx_' || true)
if [ -n "$stray" ]; then
	echo "check-kernels-lib: global symbols without the dainx_ prefix:" $stray >&2
	fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "check-kernels-lib: $nk kernels with sm_80 and sm_90 SASS ($elf, $elf90 cubins) and compute_90 PTX ($ptx); $(echo "$defined" | grep -c '^dainx_k_') launchers; no unprefixed symbols"
