#!/usr/bin/env bash
# device-run.sh: one call of the GPU machine, run from the repository root
# with the .dev/ folder of `make device-bundle` carried along and $OUT set to
# the folder whose files come back (at most 8). A contact is three calls of
# at most 8 minutes each, one preset each:
#
#   PLAN=1  first contact and correctness (about 4 minutes)
#           info.txt         date, nvidia-smi, `ldconfig -p | grep libcuda`,
#                            which python3 / compute-sanitizer / nvcc
#           driver.txt       driver binding tests
#           conformance.txt  the conformance suite on CUDA: synchronous
#                            first (DAINX_CUDA_SYNC=1: a fault names its
#                            operation), then asynchronous, every precision
#           memcheck.txt     compute-sanitizer memcheck, whole suite
#           racecheck.txt    racecheck on the GEMM and reduction cases, then on
#                            the sparse path, then on the GEMM family
#                            (TestGemmFamily; RACE_TIMEOUT s each, default 240)
#           synccheck.txt    synccheck on the same cases
#           initcheck.txt    initcheck on the whole suite
#           summary.txt      one line per step: ok / FAIL / skipped
#   PLAN=2  end to end, CUDA against CPU (about 6 minutes)
#           dainx augment on $TENSORS (default movingmnist100 foursquare_nyc)
#           with the same split and seed on -backend cuda and -backend cpu
#           (all cores of the GPU machine), $EXTRA (default "-epochs 5");
#           BACKENDS="cuda cuda-graphs cpu" adds a CUDA run with the training
#           step replayed as CUDA graphs (DAINX_CUDA_GRAPHS=1), compared too;
#           cuda-tuned: graphs and the tuned GEMM family with serial split-K
#           (DAINX_CUDA_GRAPHS=1 DAINX_GEMM_TUNE=time, issue 24);
#           augment.log (progress of every run), aug_<tensor>_<backend>.json
#           (the reports), compare.txt (test RMSE of each pair, and whether
#           CUDA is within 2% of the CPU), summary.txt
#   PLAN=3  benchmarks (about 7 minutes): benchrun twice, the measurements
#           (ops, the training step and TracIn in every precision, the
#           PyTorch peers in interleaved rounds, PAIRED of them, default 5)
#           and the end-to-end runs on the GPU (demo, movielens, the whole
#           default run on movingmnist100); benchrun.txt, results/gpu-DATE*
#           .{json,md} (copy them into bench/results/), summary.txt
#
#   PLAN=check  the 15-minute lease's correctness call (issue 36; at most
#           DEADLINE s, default 400): the CPU reference run in the
#           background while the GPU runs driver and conformance tests
#           (TestGemmFamily, TestGemmTuned, TestTrainGraphs,
#           TestSparseCapture among them), the same short `dainx augment`
#           on CUDA eager and with graphs and tuning on
#           (aug_<t>_cuda.json, aug_<t>_cuda-tuned.json against
#           aug_<t>_cpu.json in compare.txt), `-dist mpi` on two ranks
#           sharing the GPU with NCCL off and on (nccl.txt; needs the MPI
#           of .mpi/mpi.tgz or mpiexec on PATH, and libnccl.so.2 from the
#           image's nvidia-nccl wheel), then the sanitizers over the
#           kernels no GPU has checked yet, each step cut to the time left
#   PLAN=speed  the lease's speed call (at most DEADLINE s, default 220):
#           `dainx tune` on the default model (tune.txt), then benchrun's
#           GPU rows only (each precision's step with the 64×64 kernels
#           and tuned, eager and graph-replayed, PyTorch at its best in
#           PAIRED interleaved rounds, default 3)
#   PLAN=xeon  the GPU machine's host CPU (an Intel Xeon with AVX-512) as
#           the CPU benchmark machine of issue 33, at most DEADLINE s
#           (default 480): two physical cores of one socket, no SMT
#           siblings (CORES overrides, e.g. CORES=0,1), the GPU hidden
#           (CUDA_VISIBLE_DEVICES=); cpuinfo.txt (lscpu, the cores
#           chosen, the AVX-512 flags); benchrun's CPU rows on the
#           AVX-512 path (results/xeon-avx512), again with
#           GODEBUG=cpu.avx512f=off (results/xeon-avx2), then the
#           end-to-end runs E2E_RUNS (default "demo movielens") on the
#           CPU, one benchrun each (results/xeon-e2e-RUN); before them,
#           GPU=1 adds the CUDA test binary and `dainx augment` on the
#           GPU, graphs on and off, against the CPU report in .dev/ref
#           (made beforehand on any machine, same flags: compare.txt)
#
# Every step has a time limit (STEP_TIMEOUT seconds, set per preset); a
# failing step is recorded and the others still run; the exit status is
# non-zero if any failed. A tool or file that is missing is a failure, not
# a skip: a contact that checked less than it says is worse than none.
#
# Environment: PLAN (required; also "compare", which only rewrites
# compare.txt from the reports in $OUT), STEP_TIMEOUT (seconds per step),
# TENSORS, BACKENDS (PLAN=2's backends, default "cuda cpu"), EXTRA, SEED
# (default 1), BENCHFLAGS (more benchrun flags), SUMMARY (the summary's file
# name, default summary.txt, so that two presets can share one $OUT).
#
# PLAN=1 and PLAN=2 fit one call when the CPU runs of PLAN=2 go in the
# background (they need the CPU cores, PLAN=1 mostly the GPU):
#   (OUT=/tmp/p2 PLAN=2 BACKENDS=cpu SUMMARY=s_cpu.txt bash scripts/device-run.sh) &
#   OUT=/tmp/p1 PLAN=1 bash scripts/device-run.sh
#   OUT=/tmp/p2 PLAN=2 BACKENDS=cuda SUMMARY=s_cuda.txt bash scripts/device-run.sh
#   wait; OUT=/tmp/p2 PLAN=compare bash scripts/device-run.sh
# then pack /tmp/p1 and /tmp/p2 into $OUT (8 files come back).
#
# Usage on the device tool: command "PLAN=1 bash scripts/device-run.sh",
# carry [".dev"].
set -uo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
fi
: "${OUT:?set OUT to the folder for logs and reports}"
: "${PLAN:?set PLAN to 1, 2 or 3 (scripts/device-run.sh -h)}"
dev=.dev
SEED=${SEED:-1}
mkdir -p "$OUT"
# make device-bundle packs the binaries into .dev/bin.tar.gz.
if [ -f $dev/bin.tar.gz ] && [ ! -x $dev/cuda.test ]; then
	tar xzf $dev/bin.tar.gz -C $dev || echo "device-run: could not unpack $dev/bin.tar.gz" >&2
fi
summary=$OUT/${SUMMARY:-summary.txt}
: >"$summary"
status=0

# step NAME LOG CMD...: run CMD with its output appended to $OUT/LOG, under
# STEP_TIMEOUT, and record the result.
step() {
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS rc limit=${STEP_TIMEOUT:-300}
	# DEADLINE (seconds since the script started): no step runs past it.
	if [ -n "${DEADLINE:-}" ]; then
		local left=$((DEADLINE - SECONDS))
		if [ $left -lt 10 ]; then
			echo "FAIL  $name (not run: the call's $DEADLINE s were spent)" | tee -a "$summary"
			status=1
			return
		fi
		[ $left -lt "$limit" ] && limit=$left
	fi
	echo "== $name: $*" >>"$OUT/$log"
	timeout "$limit" "$@" >>"$OUT/$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok    $name ($((SECONDS - t0)) s)" | tee -a "$summary"
	else
		[ $rc -eq 124 ] && echo "== $name: stopped after $limit s" >>"$OUT/$log"
		echo "FAIL  $name (exit $rc, $((SECONDS - t0)) s; see $log)" | tee -a "$summary"
		status=1
	fi
}

fail() {
	echo "FAIL  $1 ($2)" | tee -a "$summary"
	status=1
}

# need FILE...: fail (and return 1) unless every file exists.
need() {
	local f
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			fail "$f" "missing: run make device-bundle here and carry .dev"
			return 1
		fi
	done
}

# sanitizer finds compute-sanitizer on PATH, under /usr/local or /opt.
sanitizer() {
	command -v compute-sanitizer 2>/dev/null && return
	find /usr/local /opt -maxdepth 5 -name compute-sanitizer -type f -perm -u+x 2>/dev/null | sort | tail -n 1
}

# gemm_cases is the -test.run pattern of the GEMM and reduction cases, and
# of the sparse embedding path's shared-memory sort and its users (issue 20).
gemm_dense='^TestConformance$/.*/^(LinearForward|LinearBackward|MSEGrad|LinearForwardMSE|InfluenceDot|EntityImportance)$'
gemm_sparse='^TestConformance$/.*/^(DistinctRows|CompactRows|SparseAdam)$'
gemm_cases='^TestConformance$/.*/^(LinearForward|LinearBackward|MSEGrad|LinearForwardMSE|InfluenceDot|EntityImportance|DistinctRows|CompactRows|SparseAdam)$'

plan1() {
	STEP_TIMEOUT=${STEP_TIMEOUT:-120}
	{
		date -u
		nvidia-smi
		echo "== ldconfig -p | grep libcuda"
		ldconfig -p | grep -i libcuda
		echo "== tools"
		for t in python3 compute-sanitizer nvcc ncu; do echo "$t: $(command -v $t || echo missing)"; done
		python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
		nproc
	} >"$OUT/info.txt" 2>&1
	need $dev/cuda_driver.test $dev/cuda.test || return
	step driver driver.txt $dev/cuda_driver.test -test.v -test.count=1
	step "conformance (synchronous)" conformance.txt $dev/cuda.test -test.v -test.count=1 -test.run '^TestSynchronous$'
	step "conformance (asynchronous, every precision, the rest)" conformance.txt $dev/cuda.test -test.v -test.count=1 -test.skip '^TestSynchronous$'
	if grep -q -- '--- SKIP: TestConformance' "$OUT/conformance.txt"; then
		fail conformance "skipped: the CUDA backend saw no device"
	fi
	local san
	san=$(sanitizer)
	if [ -z "$san" ]; then
		fail sanitizer "compute-sanitizer not on PATH, under /usr/local or /opt"
		return
	fi
	step memcheck memcheck.txt env DAINX_CUDA_SYNC=1 "$san" --tool memcheck --leak-check full --error-exitcode 3 \
		$dev/cuda.test -test.run '^TestConformance' -test.count=1
	# racecheck is slow (every shared-memory access is tracked): the GEMM
	# and reduction cases and the sparse path's sorts are two steps, each
	# with its own limit, verbose so that a stopped step shows how far it got.
	STEP_TIMEOUT=${RACE_TIMEOUT:-240} step "racecheck (GEMM, reductions)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run "$gemm_dense" -test.short -test.count=1
	STEP_TIMEOUT=${RACE_TIMEOUT:-240} step "racecheck (sparse path)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run "$gemm_sparse" -test.short -test.count=1
	step synccheck synccheck.txt "$san" --tool synccheck --error-exitcode 3 \
		$dev/cuda.test -test.run "$gemm_cases" -test.short -test.count=1
	# The GEMM family of issue 24 (every tile variant against the 64×64
	# kernel, bit for bit; the conformance step above ran it whole): the
	# sanitizers on its short shapes.
	step "memcheck (GEMM family)" memcheck.txt "$san" --tool memcheck --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run '^TestGemmFamily$' -test.short -test.count=1
	STEP_TIMEOUT=${RACE_TIMEOUT:-240} step "racecheck (GEMM family)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run '^TestGemmFamily$' -test.short -test.count=1
	step "synccheck (GEMM family)" synccheck.txt "$san" --tool synccheck --error-exitcode 3 \
		$dev/cuda.test -test.run '^TestGemmFamily$' -test.short -test.count=1
	# Serial split-K (kernels/splitk.cuh): the tuned passes (model mode
	# in -short) against the 64×64 kernels, under memcheck and synccheck.
	step "memcheck (serial split-K)" memcheck.txt "$san" --tool memcheck --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run '^TestGemmTuned$' -test.short -test.count=1
	step "synccheck (serial split-K)" synccheck.txt "$san" --tool synccheck --error-exitcode 3 \
		$dev/cuda.test -test.run '^TestGemmTuned$' -test.short -test.count=1
	step initcheck initcheck.txt "$san" --tool initcheck --error-exitcode 3 \
		$dev/cuda.test -test.run '^TestConformance' -test.count=1
}

plan2() {
	STEP_TIMEOUT=${STEP_TIMEOUT:-240}
	local t b f
	need $dev/dainx || return
	for t in ${TENSORS:-movingmnist100 foursquare_nyc}; do
		f=$dev/data/$t.tsv.gz
		[ -f "$f" ] || f=$dev/data/$t.tsv
		need "$f" || continue
		for b in ${BACKENDS:-cuda cpu}; do
			# cuda-graphs: -backend cuda with the training step replayed as
			# CUDA graphs (DAINX_CUDA_GRAPHS=1).
			local env=() be=$b
			[ "$b" = cuda-graphs ] && env=(DAINX_CUDA_GRAPHS=1) be=cuda
			[ "$b" = cuda-tuned ] && env=(DAINX_CUDA_GRAPHS=1 DAINX_GEMM_TUNE=time) be=cuda
			# shellcheck disable=SC2086
			step "augment $t $b" augment.log env "${env[@]}" $dev/dainx augment -input "$f" -backend "$be" -seed "$SEED" \
				-output "/tmp/aug_${t}_$b.tsv" -report "$OUT/aug_${t}_$b.json" ${EXTRA:--epochs 5}
		done
	done
	case " ${BACKENDS:-cuda cpu} " in *" cpu "*) case " ${BACKENDS:-cuda cpu} " in *" cuda"*) compare ;; esac ;; esac
}

# compare writes compare.txt from the reports of PLAN=2.
compare() {
	python3 - "$OUT" >"$OUT/compare.txt" 2>&1 <<'PY' || status=1
import glob, json, os, sys
out = sys.argv[1]
ok = True
pairs = 0
for cu in sorted(glob.glob(os.path.join(out, "aug_*_cuda*.json"))):
    variant = os.path.basename(cu)[:-len(".json")].rsplit("_", 1)[1]  # cuda, cuda-graphs, cuda-tuned
    cp = cu[:-len(variant + ".json")] + "cpu.json"
    t = os.path.basename(cu)[4:-len("_" + variant + ".json")] + ("" if variant == "cuda" else f" ({variant[5:]})")
    if not os.path.exists(cp):
        print(f"{t}: no CPU report"); ok = False; continue
    a, b = json.load(open(cu)), json.load(open(cp))
    pairs += 1
    for k in ("rmse_before", "rmse_after"):
        d = abs(a[k] - b[k]) / b[k]
        good = d <= 0.02
        ok &= good
        print(f"{t} {k}: cuda {a[k]:.5f} cpu {b[k]:.5f} ({100*d:.2f}% apart, {'within' if good else 'OUTSIDE'} 2%)")
    for k in ("n_train", "n_val", "n_test", "n_aug"):
        if a[k] != b[k]:
            print(f"{t} {k}: cuda {a[k]} cpu {b[k]} differ"); ok = False
    print(f"{t} seconds: cuda {a['seconds']}  cpu {b['seconds']}")
    print(f"{t} devices: cuda {a.get('device')}  cpu {b.get('device')}")
if pairs == 0:
    print("no CUDA/CPU pairs of reports in", out); ok = False
print("all within 2%" if ok else "NOT all within 2%")
sys.exit(0 if ok else 1)
PY
	cat "$OUT/compare.txt"
}

plan3() {
	STEP_TIMEOUT=${STEP_TIMEOUT:-330}
	need $dev/benchrun $dev/dainx || return
	local commit
	commit=$(cat $dev/COMMIT 2>/dev/null || echo unknown)
	# shellcheck disable=SC2086
	step "benchrun (ops, steps, peers)" benchrun.txt env DAINX_DATA=$dev/data $dev/benchrun -dainx $dev/dainx \
		-commit "$commit" -e2e=false -generic=false -paired "${PAIRED:-5}" -out "$OUT/results" ${BENCHFLAGS:-}
	# shellcheck disable=SC2086
	step "benchrun (end to end)" benchrun.txt env DAINX_DATA=$dev/data $dev/benchrun -dainx $dev/dainx \
		-commit "$commit" -micro=false -e2e-runs demo,movielens,movingmnist -movingmnist-epochs 0 -movingmnist-full \
		-out "$OUT/results" ${BENCHFLAGS:-}
	rm -f "$OUT/results/latest.json" "$OUT/results/latest.md"
	grep -v '^|' "$OUT/benchrun.txt" | tail -n 40
}

# info writes info.txt: the device, the driver and the tools.
info() {
	local t
	{
		date -u
		cat $dev/COMMIT 2>/dev/null
		nvidia-smi
		nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
		echo "== ldconfig -p | grep libcuda"
		ldconfig -p | grep -i libcuda
		echo "== tools"
		for t in python3 compute-sanitizer nvcc ncu mpiexec; do echo "$t: $(command -v $t || echo missing)"; done
		python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
		echo "libnccl: $(nccl_dir)"
		nproc
	} >"$OUT/info.txt" 2>&1
}

# nccl_dir prints the folder of libnccl.so.2 (the image's nvidia-nccl
# wheel, else the linker's cache).
nccl_dir() {
	local d
	d=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
	if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then echo "$d"; return; fi
	d=$(ldconfig -p | sed -n 's/.*libnccl.so.2 .*=> //p' | head -n 1)
	[ -n "$d" ] && dirname "$d"
}

# mpi_env sets PATH, LD_LIBRARY_PATH and DAINX_LIBMPI for the MPICH that
# .mpi/mpi.tgz carries (Debian's mpich 4.0.2 with its libraries), when
# there is no mpiexec on the machine.
mpi_env() {
	if [ -f .mpi/mpi.tgz ] && [ ! -x .mpi/bin/mpiexec ]; then
		tar xzf .mpi/mpi.tgz || return 1
	fi
	if [ -x .mpi/bin/mpiexec ]; then
		export PATH=$PWD/.mpi/bin:$PATH LD_LIBRARY_PATH=$PWD/.mpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export DAINX_LIBMPI=$PWD/.mpi/lib/libmpich.so.12
	fi
	command -v mpiexec >/dev/null
}

# nccl_pair runs `dainx augment -dist mpi` on two ranks sharing the GPU
# with -nccl off, then on (args as the caller set them; STEP_TIMEOUT per
# run), and records the augmented cells' hashes in nccl.txt.
nccl_pair() {
	if ! (mpi_env); then
		fail "mpiexec -n 2 -dist mpi" "no mpiexec: carry .mpi (mpi.tgz)"
		return
	fi
	(
		mpi_env
		nd=$(nccl_dir)
		[ -n "$nd" ] && export LD_LIBRARY_PATH=$nd:$LD_LIBRARY_PATH
		for n in off on; do
			step "mpiexec -n 2 -dist mpi -nccl $n" nccl.txt mpiexec -n 2 \
				$dev/dainx augment "${args[@]}" -backend cuda -dist mpi -nccl $n \
				-output /tmp/nccl_$n.tsv -report "$OUT/nccl_$n.json"
		done
		{
			echo "== cells: sha256 of the augmented tensors (-nccl off, on)"
			sha256sum /tmp/nccl_off.tsv /tmp/nccl_on.tsv
		} >>"$OUT/nccl.txt" 2>&1
		exit $status
	) || status=1
}

plancheck() {
	DEADLINE=${DEADLINE:-400}
	local t=${TENSOR:-foursquare_nyc} f args cpu_pid
	f=$dev/data/$t.tsv.gz
	[ -f "$f" ] || f=$dev/data/$t.tsv
	info
	need $dev/cuda_driver.test $dev/cuda.test $dev/dainx "$f" || return
	# shellcheck disable=SC2206
	args=(-input "$f" -seed "$SEED" ${EXTRA:--epochs 3})
	# The CPU reference on half the cores, while the GPU works.
	(
		summary=$OUT/s_cpu.txt
		: >"$summary"
		STEP_TIMEOUT=300 step "augment $t cpu" augment_cpu.log env GOMAXPROCS=${CPU_THREADS:-8} \
			$dev/dainx augment "${args[@]}" -backend cpu -output /tmp/aug_cpu.tsv -report "$OUT/aug_${t}_cpu.json"
	) &
	cpu_pid=$!
	STEP_TIMEOUT=30 step driver driver.txt $dev/cuda_driver.test -test.v -test.count=1
	STEP_TIMEOUT=150 step "conformance (every test, every precision)" conformance.txt $dev/cuda.test -test.v -test.count=1
	if grep -q -- '--- SKIP: TestConformance' "$OUT/conformance.txt"; then
		fail conformance "skipped: the CUDA backend saw no device"
	fi
	STEP_TIMEOUT=60 step "augment $t cuda" augment.log \
		$dev/dainx augment "${args[@]}" -backend cuda -output /tmp/aug_cuda.tsv -report "$OUT/aug_${t}_cuda.json"
	STEP_TIMEOUT=60 step "augment $t cuda-tuned (graphs, DAINX_GEMM_TUNE=time)" augment.log \
		env DAINX_CUDA_GRAPHS=1 DAINX_GEMM_TUNE=time $dev/dainx augment "${args[@]}" -backend cuda \
		-output /tmp/aug_cuda-tuned.tsv -report "$OUT/aug_${t}_cuda-tuned.json"
	# NCCL: two ranks sharing the GPU, gradients through MPI, then NCCL.
	STEP_TIMEOUT=90 nccl_pair
	# The sanitizers over what no GPU has checked: the GEMM family, serial
	# split-K, graph capture of the sparse path.
	local san
	san=$(sanitizer)
	if [ -z "$san" ]; then
		fail sanitizer "compute-sanitizer not on PATH, under /usr/local or /opt"
	else
		STEP_TIMEOUT=90 step "memcheck (GEMM family, serial split-K, capture)" memcheck.txt "$san" --tool memcheck --error-exitcode 3 \
			$dev/cuda.test -test.v -test.run '^(TestGemmFamily|TestGemmTuned|TestSparseCapture|TestTrainGraphs)$' -test.short -test.count=1
		STEP_TIMEOUT=60 step "synccheck (GEMM family, serial split-K)" synccheck.txt "$san" --tool synccheck --error-exitcode 3 \
			$dev/cuda.test -test.v -test.run '^(TestGemmFamily|TestGemmTuned)$' -test.short -test.count=1
		STEP_TIMEOUT=60 step "racecheck (sparse path)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
			$dev/cuda.test -test.v -test.run "$gemm_sparse" -test.short -test.count=1
		STEP_TIMEOUT=120 step "racecheck (GEMM family)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
			$dev/cuda.test -test.v -test.run '^TestGemmFamily$' -test.short -test.count=1
	fi
	wait $cpu_pid
	cat "$OUT/s_cpu.txt" >>"$summary"
	grep -q '^FAIL' "$OUT/s_cpu.txt" && status=1
	compare
}

planspeed() {
	DEADLINE=${DEADLINE:-220}
	need $dev/benchrun $dev/dainx || return
	info
	local commit
	commit=$(cat $dev/COMMIT 2>/dev/null || echo unknown)
	STEP_TIMEOUT=30 step "dainx tune (default model, every precision)" tune.txt bash -c \
		"TIMEFORMAT='%R s wall'; for p in fp32 tf32 3xtf32; do time $dev/dainx tune -precision \$p || exit 1; done"
	# shellcheck disable=SC2086
	step "benchrun (GPU rows)" benchrun.txt env DAINX_DATA=$dev/data $dev/benchrun -dainx $dev/dainx \
		-commit "$commit" -cpu=false -e2e=false -generic=false -paired "${PAIRED:-3}" -mintime 200ms \
		-out "$OUT/results" ${BENCHFLAGS:-}
	rm -f "$OUT/results/latest.json" "$OUT/results/latest.md"
	grep -v '^|' "$OUT/benchrun.txt" | tail -n 60
}

# planrecheck reruns what the first check of 2026-11-26 failed, after the
# fixes: the tests of serial split-K under capture, the tuned run with
# graphs (its CPU pair is the first check's report, compared here), the
# two ranks on one GPU, and racecheck of the sparse path with more time.
planrecheck() {
	DEADLINE=${DEADLINE:-230}
	local t=${TENSOR:-foursquare_nyc} f args
	f=$dev/data/$t.tsv.gz
	[ -f "$f" ] || f=$dev/data/$t.tsv
	info
	need $dev/cuda.test $dev/dainx "$f" || return
	# shellcheck disable=SC2206
	args=(-input "$f" -seed "$SEED" ${EXTRA:--epochs 3})
	STEP_TIMEOUT=90 step "tests (serial split-K in a capture, tuned, graphs)" conformance.txt $dev/cuda.test -test.v -test.count=1 \
		-test.run '^(TestCaptureSerialSplit|TestGemmTuned|TestTrainGraphs|TestSparseCapture)$'
	STEP_TIMEOUT=60 step "augment $t cuda-tuned (graphs, DAINX_GEMM_TUNE=time)" augment.log \
		env DAINX_CUDA_GRAPHS=1 DAINX_GEMM_TUNE=time $dev/dainx augment "${args[@]}" -backend cuda \
		-output /tmp/aug_cuda-tuned.tsv -report "$OUT/aug_${t}_cuda-tuned.json"
	STEP_TIMEOUT=60 nccl_pair
	local san
	san=$(sanitizer)
	STEP_TIMEOUT=30 step "memcheck (serial split-K in a capture)" memcheck.txt "$san" --tool memcheck --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run '^TestCaptureSerialSplit$' -test.count=1
	STEP_TIMEOUT=150 step "racecheck (sparse path)" racecheck.txt "$san" --tool racecheck --racecheck-report all --error-exitcode 3 \
		$dev/cuda.test -test.v -test.run "$gemm_sparse" -test.short -test.count=1
}

# xeon_cores prints two CPUs of package 0 on distinct physical cores (no
# SMT siblings), as taskset -c wants them.
xeon_cores() {
	local c d seen="" out=""
	for d in /sys/devices/system/cpu/cpu[0-9]*; do
		c=${d##*cpu}
		[ "$(cat "$d/topology/physical_package_id" 2>/dev/null)" = 0 ] || continue
		local core
		core=$(cat "$d/topology/core_id" 2>/dev/null) || continue
		case " $seen " in *" $core "*) continue ;; esac
		seen="$seen $core"
		out="$out${out:+,}$c"
		[ "$(echo "$out" | tr , '\n' | wc -l)" -ge 2 ] && break
	done
	echo "$out"
}

planxeon() {
	DEADLINE=${DEADLINE:-480}
	need $dev/benchrun $dev/dainx || return
	local commit cores
	commit=$(cat $dev/COMMIT 2>/dev/null || echo unknown)
	cores=${CORES:-$(xeon_cores)}
	{
		date -u
		echo "commit $commit"
		lscpu
		echo "== cores chosen: $cores"
		for c in ${cores//,/ }; do
			echo "cpu$c: package $(cat /sys/devices/system/cpu/cpu$c/topology/physical_package_id) core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id) siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list)"
		done
		echo "== AVX-512 flags"
		grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E 'avx512|amx|avx_vnni' | tr '\n' ' '
		echo
		echo "== load"
		cat /proc/loadavg
		python3 -c 'import torch; print("torch", torch.__version__); print(torch.__config__.show())'
	} >"$OUT/cpuinfo.txt" 2>&1
	local pin=(taskset -c "$cores" env CUDA_VISIBLE_DEVICES= DAINX_DATA=$dev/data)
	STEP_TIMEOUT=${MICRO_TIMEOUT:-150} step "benchrun AVX-512 path (peak, ops, step, PyTorch)" benchrun.txt "${pin[@]}" \
		$dev/benchrun -dainx $dev/dainx -commit "$commit" -e2e=false -generic=false -paired "${PAIRED:-5}" ${BENCHFLAGS:-} \
		-out "$OUT/results/xeon-avx512"
	STEP_TIMEOUT=${MICRO_TIMEOUT:-150} step "benchrun AVX2 path (GODEBUG=cpu.avx512f=off)" benchrun.txt "${pin[@]}" GODEBUG=cpu.avx512f=off \
		$dev/benchrun -dainx $dev/dainx -commit "$commit" -e2e=false -generic=false -paired "${PAIRED_AVX2:-3}" ${BENCHFLAGS:-} \
		-out "$OUT/results/xeon-avx2"
	[ -n "${GPU:-}" ] && gpucheck
	local r
	for r in ${E2E_RUNS:-demo movielens}; do
		STEP_TIMEOUT=${E2E_TIMEOUT:-240} step "benchrun end to end ($r; CPU)" benchrun.txt "${pin[@]}" \
			$dev/benchrun -dainx $dev/dainx -commit "$commit" -micro=false -e2e-backend cpu \
			-e2e-runs "$r" -movingmnist-epochs 0 -out "$OUT/results/xeon-e2e-$r"
	done
	rm -f "$OUT"/results/xeon-*/latest.*
	grep -v '^|' "$OUT/benchrun.txt" | tail -n 40
}

# gpucheck: the CUDA test binary, then `dainx augment` on the GPU (graphs
# on, the default; and eager) against the CPU report in .dev/ref (same
# input, seed and flags; any machine's CPU), in compare.txt.
gpucheck() {
	local t=${TENSOR:-foursquare_nyc} f args
	f=$dev/data/$t.tsv.gz
	need $dev/cuda.test "$f" $dev/ref/aug_${t}_cpu.json || return
	cp $dev/ref/aug_${t}_cpu.json "$OUT/"
	# shellcheck disable=SC2206
	args=(-input "$f" -seed "$SEED" ${EXTRA:--epochs 3})
	STEP_TIMEOUT=120 step "CUDA tests (every test, every precision)" conformance.txt $dev/cuda.test -test.v -test.count=1
	if grep -q -- '--- SKIP: TestConformance' "$OUT/conformance.txt"; then
		fail conformance "skipped: the CUDA backend saw no device"
	fi
	STEP_TIMEOUT=40 step "augment $t cuda (graphs)" augment.log \
		$dev/dainx augment "${args[@]}" -backend cuda -output /tmp/aug_cuda.tsv -report "$OUT/aug_${t}_cuda.json"
	STEP_TIMEOUT=40 step "augment $t cuda-eager" augment.log \
		$dev/dainx augment "${args[@]}" -backend cuda -graphs off -output /tmp/aug_cuda-eager.tsv -report "$OUT/aug_${t}_cuda-eager.json"
	compare
}

case $PLAN in
xeon) planxeon ;;
recheck) planrecheck ;;
check) plancheck ;;
speed) planspeed ;;
1) plan1 ;;
2) plan2 ;;
3) plan3 ;;
compare) compare ;;
*)
	echo "PLAN=$PLAN: want check, speed, 1, 2 or 3 (scripts/device-run.sh -h)" >&2
	exit 2
	;;
esac
echo "== summary (PLAN=$PLAN)"
cat "$summary"
exit $status
