#!/usr/bin/env bash
# device-run.sh: run on the GPU machine, from the repository root, with the
# .dev/ folder of scripts/device-bundle.sh carried along and $OUT set to the
# folder whose contents come back. Everything is logged under $OUT:
#
#   nvidia-smi.txt                   the device and driver
#   cuda_driver.txt                  driver binding tests
#   cuda_conformance.txt             compute conformance suite on CUDA (-test.v)
#   compute_cpu.txt                  the same suite on the CPU backend
#   sanitizer.txt                    compute-sanitizer (memcheck) on a short
#                                    conformance run, if the tool exists
#   augment_<tensor>_<backend>.log   dainx augment, progress and report
#   augment_<tensor>_<backend>.json  the JSON report (-report)
#   bench.txt                        Go benchmarks (step "bench", not default)
#   benchrun.txt, results/           `make bench` without the end-to-end runs
#                                    (step "benchrun", not default): writes
#                                    results/gpu-DATE.{json,md}; copy them to
#                                    bench/results/
#   summary.txt                      one line per step: ok / FAIL / skipped
#
# Steps run one after another; a failing step is recorded and the others
# still run. The exit status is non-zero if any step failed.
#
# One call of the device tool may run 10 minutes at most, so split the work
# over calls with STEPS, e.g.
#   STEPS="smi driver conformance cpu" scripts/device-run.sh
#   STEPS=sanitizer scripts/device-run.sh
#   STEPS=augment TENSORS=movingmnist100 scripts/device-run.sh
#   STEPS="benchrun bench" scripts/device-run.sh
# and set STEP_TIMEOUT (seconds) to stop any one step in time, keeping what
# it logged.
#
# Environment: STEPS (default "smi driver conformance cpu sanitizer augment"),
# TENSORS (default "movingmnist100 foursquare_nyc"), BACKENDS (default
# "cuda"; add cpu to compare test RMSE, which takes much longer), SEED
# (default 1), EXTRA (more dainx augment flags, e.g. "-epochs 5"), BENCH
# (the -test.bench pattern of the bench step, default "."), SANITIZE (the
# -test.run pattern of the sanitizer step, default "TestConformance"),
# STEP_TIMEOUT (seconds per step, default none).
set -uo pipefail

: "${OUT:?set OUT to the folder for logs and reports}"
dev=.dev
STEPS=${STEPS:-smi driver conformance cpu sanitizer augment}
TENSORS=${TENSORS:-movingmnist100 foursquare_nyc}
BACKENDS=${BACKENDS:-cuda}
SEED=${SEED:-1}
EXTRA=${EXTRA:-}
mkdir -p "$OUT"
summary=$OUT/summary.txt
: >"$summary"
status=0

# step NAME LOG CMD...: run CMD with output to $OUT/LOG and record the result.
step() {
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS rc
	echo "== $name: $*" | tee -a "$OUT/$log"
	if [ -n "${STEP_TIMEOUT:-}" ]; then
		timeout "$STEP_TIMEOUT" "$@" >>"$OUT/$log" 2>&1
	else
		"$@" >>"$OUT/$log" 2>&1
	fi
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok    $name ($((SECONDS - t0)) s)" | tee -a "$summary"
	else
		echo "FAIL  $name (exit $rc, $((SECONDS - t0)) s; see $log)" | tee -a "$summary"
		status=1
	fi
}

skip() { echo "skip  $1 ($2)" | tee -a "$summary"; }

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

if has smi; then
	if command -v nvidia-smi >/dev/null 2>&1; then
		step nvidia-smi nvidia-smi.txt nvidia-smi
	else
		skip nvidia-smi "not installed"
	fi
fi

if has driver; then
	if [ -x "$dev/cuda_driver.test" ]; then
		step driver cuda_driver.txt "$dev/cuda_driver.test" -test.v -test.count=1
	else
		skip driver "no $dev/cuda_driver.test; run make device-bundle"
	fi
fi

if has conformance; then
	if [ -x "$dev/cuda.test" ]; then
		step conformance cuda_conformance.txt "$dev/cuda.test" -test.v -test.count=1
		# Every CUDA test must have run, not skipped.
		if grep -q -- '--- SKIP: TestConformance' "$OUT/cuda_conformance.txt"; then
			echo "FAIL  conformance skipped: no device seen" | tee -a "$summary"
			status=1
		fi
	else
		skip conformance "no $dev/cuda.test; run make device-bundle"
	fi
fi

if has cpu; then
	if [ -x "$dev/compute_cpu.test" ]; then
		step cpu compute_cpu.txt "$dev/compute_cpu.test" -test.count=1
	else
		skip cpu "no $dev/compute_cpu.test"
	fi
fi

if has sanitizer; then
	san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1 || true)
	if [ -n "$san" ] && [ -x "$dev/cuda.test" ]; then
		# memcheck over the conformance suite, synchronous launches so that a
		# fault is reported under its kernel; the slow second pass is skipped.
		step sanitizer sanitizer.txt env DAINX_CUDA_SYNC=1 "$san" --tool memcheck --error-exitcode 3 \
			"$dev/cuda.test" -test.run "${SANITIZE:-TestConformance}" -test.short -test.count=1
	else
		skip sanitizer "compute-sanitizer or $dev/cuda.test missing"
	fi
fi

if has augment; then
	if [ -x "$dev/dainx" ]; then
		for t in $TENSORS; do
			f=$dev/data/$t.tsv.gz
			[ -f "$f" ] || f=$dev/data/$t.tsv
			if [ ! -f "$f" ]; then
				skip "augment $t" "no $dev/data/$t.tsv[.gz]"
				continue
			fi
			for b in $BACKENDS; do
				# shellcheck disable=SC2086
				step "augment $t $b" "augment_${t}_$b.log" \
					"$dev/dainx" augment -input "$f" -backend "$b" -seed "$SEED" \
					-report "$OUT/augment_${t}_$b.json" $EXTRA
			done
		done
	else
		skip augment "no $dev/dainx"
	fi
fi

if has bench; then
	if [ -x "$dev/bench.test" ]; then
		step bench bench.txt "$dev/bench.test" -test.run '^$' -test.bench "${BENCH:-.}" -test.benchmem -test.count=1
	else
		skip bench "no $dev/bench.test"
	fi
fi

if has benchrun; then
	if [ -x "$dev/benchrun" ]; then
		step benchrun benchrun.txt "$dev/benchrun" -e2e=false -generic=false -out "$OUT/results"
	else
		skip benchrun "no $dev/benchrun"
	fi
fi

echo "== summary"
cat "$summary"
exit $status
