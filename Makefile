# dainx — make targets. `make help` lists them.

# GO is the go command: scripts/go finds a Go as new as go.mod's, or
# installs one, so every target works on a fresh machine.
GO      ?= $(CURDIR)/scripts/go
PKGS    := ./...
BENCH   ?= .

.PHONY: help demo build test test-mpi test-short vet fmt-check tidy-check bench bench-quick bench-go bench-scale bench-dist clean

help:
	@echo "make demo           build ./dainx and run DAIN on the embedded demo tensor (installs Go if missing)"
	@echo "make build          build ./dainx"
	@echo "make test           vet, gofmt check and the full test suite (installs Go if missing)"
	@echo "make tidy-check     fail if go mod tidy would change go.mod or go.sum"
	@echo "make test-short     the suite without the end-to-end runs"
	@echo "make fuzz           each fuzz target (tensor FuzzRead, FuzzReadBin, table FuzzReadDicts, FuzzParquetIDs, checkpoint/rundir FuzzReadCheckpoint, model FuzzLoad) for a fixed number of executions (FUZZTIME overrides), as CI does"
	@echo "make bench          benchmarks (ops, training step, PyTorch peer, end to end) into bench/results/"
	@echo "make bench-quick    make bench without the end-to-end runs"
	@echo "make bench-dist     dainx augment on 40M and 100M cells by one process and under mpiexec -n 1, 2, 4: each rank's peak RSS, seconds, the same cells? into bench/results/dist-DATE.*"
	@echo "make bench-go       Go benchmarks of the backend ops and the pipeline"
	@echo "make bench-scale    dainx augment on 2M cells with 2.1K, 200K and 2M entities, then on 10M, 30M and 100M cells: memory and speed per cell and per entity into bench/results/scale-DATE.*; then CSV tables of 10M and 100M rows read by dainx convert -index (file and pipe): peak RSS and speed into bench/results/tables-scale-DATE.*"
	@echo "make kernels        compile kernels/*.cu to committed PTX (needs nvcc)"
	@echo "make check-kernels  check that every kernel compiles, ptxas accepts it and the PTX is current"
	@echo "make check-kernels-emu  run every GEMM tile variant in the host kernel emulator (bit-identical within a precision)"
	@echo "make device-bundle  build dainx and test binaries into .dev/ for the GPU machine"
	@echo "make lib            libdainx, the pipeline as a C library: build/lib/libdainx.so, build/include/dainx.h, dainx.pc (needs cc)"
	@echo "make install        install libdainx (and libdainx_kernels when built) under PREFIX (/usr/local)"
	@echo "make python         the Python package dainx over libdainx into build/python/ (pip install build/python)"
	@echo "make kernels-lib    the kernels as a CUDA library: build/lib/libdainx_kernels.a, build/include/dainx_kernels.h (needs nvcc)"
	@echo "make examples       build the C example and, with nvcc, the CUDA example into build/examples/"
	@echo "make wheel          the Python wheel with libdainx.so inside into build/wheel/ (pip install build/wheel/dainx-*.whl)"
	@echo "make test-embed     the C API tests, the Python tests and the examples on the CPU (what CI runs after make test)"
	@echo "make test-mpi       the -dist mpi tests under mpiexec -n 1, 2 and 3 (needs MPI: apt-get install mpich; MPIEXEC=mpiexec.openmpi for Open MPI)"

# VERSION_STAMP is the version the builds carry (internal/version): the
# release number and the commit, .dirty when the tree has changes; empty
# outside a git checkout, where the build's own VCS information is used.
VERSION_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
VERSION_BASE := $(shell sed -n 's/^const Base = "\(.*\)"/\1/p' internal/version/version.go)
VERSION_STAMP := $(if $(VERSION_REV),$(VERSION_BASE)+$(VERSION_REV)$(shell git diff --quiet HEAD -- 2>/dev/null || echo .dirty))
VERSION_LDFLAGS := $(if $(VERSION_STAMP),-X github.com/dainx/dainx/internal/version.Stamp=$(VERSION_STAMP))

build:
	CGO_ENABLED=0 $(GO) build -ldflags="$(VERSION_LDFLAGS)" -o dainx ./cmd/dainx

# make demo: the main job, `dainx augment` with default flags on the
# embedded demo tensor (about a minute on two cores); the JSON report goes
# to standard output, progress to standard error.
demo: build
	./dainx augment

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

tidy-check:
	@$(GO) mod tidy -diff || { echo "go mod tidy would change go.mod or go.sum (diff above); run go mod tidy"; exit 1; }

test: vet fmt-check
	$(GO) test -count=1 $(PKGS)

# make test-mpi: the MPI binding's collectives and `dainx augment -dist mpi`
# (same cells as one process, bad input, a killed rank) under mpiexec with
# 1, 2 and 3 ranks. MPIEXEC picks the launcher (default mpiexec.mpich, else
# mpiexec), e.g. MPIEXEC="mpiexec.openmpi --oversubscribe".
MPIEXEC ?=
test-mpi:
	DAINX_TEST_MPI=1 DAINX_MPIEXEC="$(MPIEXEC)" $(GO) test -count=1 -run 'TestCollectives|TestRanks|TestDist' ./mpi/... ./cluster/... ./cmd/dainx/

test-short: vet
	$(GO) test -count=1 -short $(PKGS)

# make fuzz: every fuzz target for a bounded number of executions each (go
# test fuzzes one target per run), about 20 s each on a 2-core VM. The
# budgets are counts, not durations: a duration's deadline races Go's fuzzing
# coordinator before Go 1.27 (go.dev/issue/75804: a spurious "context
# deadline exceeded" failure with no failing input), and -fuzzminimizetime
# 200x keeps the minimisation of a new input from stalling a run. A failing
# input is saved under PKG/testdata/fuzz/. FUZZTIME=30s (or Nx) sets every
# target's budget.
FUZZMIN ?= -fuzzminimizetime 200x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(or $(FUZZTIME),100000x) $(FUZZMIN) ./tensor/
	$(GO) test -run '^$$' -fuzz '^FuzzReadBin$$' -fuzztime $(or $(FUZZTIME),600000x) $(FUZZMIN) ./tensor/
	$(GO) test -run '^$$' -fuzz '^FuzzReadDicts$$' -fuzztime $(or $(FUZZTIME),120000x) $(FUZZMIN) ./tensor/table/
	$(GO) test -run '^$$' -fuzz '^FuzzParquetIDs$$' -fuzztime $(or $(FUZZTIME),45000x) $(FUZZMIN) ./tensor/table/
	$(GO) test -run '^$$' -fuzz '^FuzzReadCheckpoint$$' -fuzztime $(or $(FUZZTIME),150000x) $(FUZZMIN) ./checkpoint/rundir/
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(or $(FUZZTIME),50000x) $(FUZZMIN) ./model/

# make bench: machine, FMA peak, every backend op, the training step, the
# PyTorch peer (when /usr/bin/python3 has torch) and dainx end to end; writes
# bench/results/{cpu,gpu}-DATE.{json,md} and latest.{json,md}. BENCHFLAGS
# passes flags to benchrun (go run ./bench/cmd/benchrun -h).
BENCHFLAGS ?=
bench: build
	$(GO) run ./bench/cmd/benchrun $(BENCHFLAGS)

# make bench-quick: the same without the end-to-end runs and the generic path.
bench-quick: build
	$(GO) run ./bench/cmd/benchrun -e2e=false -generic=false $(BENCHFLAGS)

# make bench-scale: `dainx augment -layers 48,64,32 -epochs 1` on synthetic
# 3-mode tensors: the entity sweep (2M cells with 2.1K, 200K and 2M
# entities, -patience 1), then 10M, 30M and 100M cells (made once by dainx synth and
# cached in bench/scale-data/, git-ignored: about 8 GB with their .bin
# copies): input MB/s, peak RSS and bytes per cell, cells/s and seconds per
# stage, into bench/results/scale-DATE.{json,md}. The 100M run needs about
# 7 GB of memory and an hour or more on two cores. SCALEFLAGS passes flags
# to scalerun (go run ./bench/cmd/scalerun -h), e.g. SCALEFLAGS=-sizes=10M.
#
# It then reads generated CSV tables (string user IDs, integer item IDs,
# ISO 8601 times binned by day) of 10M and 100M rows with `dainx convert
# -index user,item,time:day -value rating`, from a file cached in
# bench/scale-data/ (about 4.5 GB for 100M rows) and through a pipe:
# seconds and peak RSS against the cells' own bytes, into
# bench/results/tables-scale-DATE.{json,md} (bench/cmd/tablescale;
# TABLESCALEFLAGS passes flags, e.g. TABLESCALEFLAGS=-rows=10M).
SCALEFLAGS ?=
TABLESCALEFLAGS ?=
bench-scale: build
	$(GO) run ./bench/cmd/scalerun $(SCALEFLAGS)
	$(GO) run ./bench/cmd/tablescale $(TABLESCALEFLAGS)

# make bench-dist: each size (default 40M and 100M cells, .bin, cached in
# bench/scale-data/) run by one process and then under mpiexec -n 1, 2 and
# 4 with -dist mpi: every rank's peak RSS, seconds per stage, the slowest
# rank, the augmented cells' SHA-256 and how many differ from one
# process's, and a fit of the largest rank's peak RSS to
# a + b·cells/P + c·cells, into bench/results/dist-DATE.{json,md}. Runs with
# more ranks than CPUs are oversubscribed (marked; memory only). DISTFLAGS
# passes scalerun flags, e.g. DISTFLAGS="-sizes 2M,5M -ranks 1,2".
DISTFLAGS ?=
bench-dist: build
	$(GO) run ./bench/cmd/scalerun -name dist -entity-sweep= -reads=false -sizes 40M,100M -ranks 1,2,4 -args "-embedding-optimizer sparse-adam" -dist-args "-shard-tables on" $(DISTFLAGS)

# make bench-go: the Go benchmarks of the backend ops and the pipeline.
bench-go:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./bench/ ./compute/... ./sampling/

clean:
	rm -f dainx
	rm -rf .dev build

-include kernels/kernels.mk
-include embed.mk
