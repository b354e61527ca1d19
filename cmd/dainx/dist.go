package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/dainx/dainx/cluster/mpijob"
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/eval"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/mpi"
	"github.com/dainx/dainx/tensor"
)

// distHelp is the help of -dist, for augment and eval.
const distHelp = "spread the run over the processes of an MPI job: `mpi` (start with mpiexec -n P or srun; the MPI library, MPICH or Open MPI, is loaded at run time); empty: one process"

// checkDist returns the usage error of a -dist value other than "" and mpi.
func checkDist(v string) error {
	if v != "" && v != "mpi" {
		return fmt.Errorf("%w: -dist %q: want mpi (or nothing for one process)", errUsage, v)
	}
	return nil
}

// openMPI initialises MPI for -dist mpi, with the options the environment
// sets (cli.MPIOptions). Without an MPI library it says why and how to get
// one.
func openMPI() (*mpi.Comm, error) {
	c, err := mpi.Init(cli.MPIOptions())
	if err != nil {
		return nil, fmt.Errorf("-dist mpi: %w", err)
	}
	return c, nil
}

// openDistBackend opens the backend for this rank: with CUDA, device
// (-device + the node-local rank) modulo the node's GPUs, so one GPU per
// rank on each node, and ranks take turns on the GPUs when a node runs
// more ranks than it has.
func openDistBackend(c *mpi.Comm, in *inputFlags, stderr io.Writer) (compute.Backend, error) {
	f := *in
	local, _ := c.LocalRank()
	if f.Backend != "cpu" {
		f.Device = rankDevice(f.Device, local, func() (int, error) { return cuda.DeviceCount(cli.CUDAEnvOptions()) })
	}
	return cli.Open(&f, stderr)
}

// rankDevice is the CUDA device ordinal of the rank of node-local index
// local: (device + local) modulo the node's device count, or device +
// local when count fails (no driver: the backend's own error, or -backend
// auto's fall-back to the CPU, says why).
func rankDevice(device, local int, count func() (int, error)) int {
	n, err := count()
	if err != nil || n < 1 {
		return device + local
	}
	return (device + local) % n
}

// augmentDist is `dainx augment -dist mpi`: every rank reads its share of
// the input and runs dain.RunOn; rank 0 prints and writes the report and
// writes the augmented cells, after every rank has finished. A failure
// that every rank agrees on (bad input) is printed once, by the rank that
// found it, and every rank exits 1; any other failure on a rank is printed
// by that rank, which then aborts the whole job (MPI_Abort), so the job
// always exits non-zero with nothing written.
func augmentDist(ctx context.Context, a *cli.Augment, ck *checkpointFlags, nccl bool, stdout, stderr io.Writer) int {
	cfg, in, output := a.Config, &a.In, a.Output
	c, err := openMPI()
	if err != nil {
		return exitFor("augment", err, ctx, stderr)
	}
	if _, local := c.LocalRank(); local*runtime.GOMAXPROCS(0) > mpi.NodeCPUs() {
		// The node's ranks run more threads than it has CPUs: an idle
		// worker spinning for the next operation would take a core that
		// another rank's thread needs (2 ranks of 2 threads on 2 cores:
		// training 3.5× slower with spinning).
		cpu.SetIdleSpin(false)
	}
	rank := c.Rank()
	if rank != 0 {
		cfg.Progress = nil
		stdout = io.Discard
	}
	fail := func(err error) int {
		if errors.Is(err, mpijob.ErrReported) || errors.Is(err, dain.ErrOtherProcess) {
			// The rank that failed prints why; this one waits for it
			// to finish (or to abort the job).
			c.Finalize()
			return exitFailure
		}
		if c.Size() > 1 && errors.Is(err, dain.ErrAgreed) {
			// Every rank returned an error at the same point (a
			// checkpoint refused): print it and end without an abort,
			// which could kill a rank before it has printed its own.
			fmt.Fprintf(stderr, "dainx augment: rank %d of %d: %v\n", rank, c.Size(), err)
			c.Finalize()
			return exitFailure
		}
		if c.Size() > 1 {
			fmt.Fprintf(stderr, "dainx augment: rank %d of %d: %v\n", rank, c.Size(), err)
			c.Abort(exitFailure)
			os.Exit(exitFailure)
		}
		code := exitFor("augment", err, ctx, stderr)
		c.Finalize()
		return code
	}
	// Agreed failures: every rank checks the same flags and files; the
	// outputs are one transaction (internal/outtx), committed by rank 0.
	// Every rank finds an agreed failure: rank 0 says why, and none exits
	// before the others have finished (an exit without MPI_Finalize ends
	// the job, which could kill rank 0 before it has printed).
	agreed := func(err error) int {
		code := exitFor("augment", err, ctx, stderrIf(rank == 0, stderr))
		c.Finalize()
		return code
	}
	tx, err := a.Begin(ck.dir)
	if err != nil {
		return agreed(err)
	}
	defer tx.Abort()
	sh, name, format, err := readShard(c, in)
	if err != nil {
		if errors.Is(err, mpijob.ErrReported) {
			c.Finalize()
			return exitFailure
		}
		code := exitFor("augment", err, ctx, stderr)
		c.Finalize()
		return code
	}
	if err := checkLayers(&cfg, len(sh.Cells.Dims)); err != nil {
		return agreed(err)
	}
	be, err := openDistBackend(c, in, stderrIf(rank == 0, stderr))
	if err != nil {
		return fail(err)
	}
	defer be.Close()
	cl := &mpijob.Cluster{C: c}
	if dc, why := mpijob.OpenNCCL(c, be, nccl); dc != nil {
		cl.Device = dc
	} else if why != "" && cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "dainx: gradients through host memory: %s\n", why)
	}
	var res *dain.Result
	if ck.dir == "" {
		res, err = dain.RunOn(ctx, cl, sh, cfg, be)
	} else {
		res, err = dain.RunOnCheckpointed(ctx, cl, sh, cfg, be, dain.Checkpoint{Dir: ck.dir, Resume: ck.resume, Input: name, Program: version(), Hook: checkpointHook})
		if err != nil && ctx.Err() != nil {
			err = &keptError{msg: fmt.Sprintf("nothing written but the checkpoint in %s, which keeps the last epoch every rank finished; the same command with -resume (and as many ranks) continues the run", ck.dir)}
		}
	}
	if err != nil {
		return fail(err)
	}
	res.Report.Input, res.Report.Preset = name, a.Preset
	// Every rank finished: only now is anything written. The augmented
	// tensor is written by every rank at once, each its own share of the
	// cells (tensor.StageFileParallel), into a temporary file that rank 0
	// commits with the report: a failure on any rank leaves nothing, and is
	// printed by the rank that met it.
	c.Barrier()
	if output != "" {
		tmp, err := tensor.StageFileParallel(tx.Output.Target(), res.Aug, tensor.WriteOptions{Format: outputFormat(output, format), IndexBase: in.IndexBase}, cl)
		if err == nil && rank == 0 {
			err = tx.Output.Adopt(tmp)
		}
		if err != nil {
			code := exitFailure
			switch {
			case c.Size() == 1:
				code = exitFor("augment", err, ctx, stderr)
			case !errors.Is(err, tensor.ErrOtherRank):
				fmt.Fprintf(stderr, "dainx augment: rank %d of %d: %v\n", rank, c.Size(), err)
			}
			c.Finalize()
			return code
		}
	}
	if rank == 0 {
		js, err := tx.Commit(&res.Report)
		if err != nil {
			return fail(err)
		}
		if _, err := stdout.Write(js); err != nil {
			return fail(err)
		}
	}
	c.Finalize()
	return exitOK
}

// stderrIf returns w when ok, else io.Discard: a failure every rank finds
// alike is printed by rank 0 only.
func stderrIf(ok bool, w io.Writer) io.Writer {
	if ok {
		return w
	}
	return io.Discard
}

// dupRound is mpijob.ReadOptions.DupRound: 0, its default, except in the
// MPI tests, whose test code (an init in dist_test.go) sets it from
// $DAINX_TEST_DUP_ROUND in the ranks it starts (the search for repeated
// cells in many rounds on a small tensor).
var dupRound int

// readShard reads this rank's share of the input: its byte range of a file,
// or its slice of the embedded demo tensor.
func readShard(c *mpi.Comm, in *inputFlags) (*dain.Shard, string, tensor.Format, error) {
	var format tensor.Format
	if in.Format != "" {
		v, err := tensor.ParseFormat(in.Format)
		if err != nil {
			return nil, "", 0, fmt.Errorf("%w: -format: %v", errUsage, err)
		}
		format = v
	} else if in.Input != "" {
		format = tensor.FormatOf(in.Input)
	}
	if in.Input == "" {
		t, err := demo.Read()
		if err != nil {
			return nil, "", 0, err
		}
		lo, hi := c.Rank()*t.NNZ()/c.Size(), (c.Rank()+1)*t.NNZ()/c.Size()
		rows := make([]int, hi-lo)
		for i := range rows {
			rows[i] = lo + i
		}
		return &dain.Shard{Cells: t.Subset(rows), First: lo, NNZ: t.NNZ()}, demoName, tensor.TSV, nil
	}
	sh, err := mpijob.ReadText(c, in.Input, mpijob.ReadOptions{ReadOptions: tensor.ReadOptions{Format: format, IndexBase: in.IndexBase}, DupRound: dupRound})
	return sh, in.Input, format, err
}

// evalDist is `dainx eval -dist mpi`. With -spread repeats every rank
// reads the whole tensor and runs the repeats r with r mod P = its rank on
// its own backend; with -spread runs every rank reads its share of the
// cells and every run is spread over all ranks (eval.EvaluateOn, as
// dainx augment -dist mpi); auto chooses repeats when each of a node's
// ranks can hold a whole run (dain.RunBytes within half the node's memory)
// and there are at least as many repeats as ranks. Rank 0 gathers the runs
// (in one process's order) and writes the output once.
func evalDist(ctx context.Context, spec eval.Spec, in *inputFlags, out, spread string, args []string, stdout, stderr io.Writer) int {
	c, err := openMPI()
	if err != nil {
		return exitFor("eval", err, ctx, stderr)
	}
	rank, size := c.Rank(), c.Size()
	fail := func(err error) int {
		if size > 1 {
			fmt.Fprintf(stderr, "dainx eval: rank %d of %d: %v\n", rank, size, err)
			c.Abort(exitFailure)
			os.Exit(exitFailure)
		}
		code := exitFor("eval", err, ctx, stderr)
		c.Finalize()
		return code
	}
	// -spread runs (and auto, to decide) reads each rank's share; repeats
	// reads the whole tensor on every rank.
	var sh *dain.Shard
	var t *tensor.COO
	var name string
	var dims []int
	var nnz int
	if spread != "repeats" {
		if sh, name, _, err = readShard(c, in); err != nil {
			if errors.Is(err, mpijob.ErrReported) {
				c.Finalize()
				return exitFailure
			}
			return fail(err)
		}
		dims, nnz = sh.Cells.Dims, sh.NNZ
	}
	if spread == "auto" {
		_, local := c.LocalRank()
		fits := dain.RunBytes(nnz, dims, spec.Base, 1)*float64(local) <= float64(dain.PhysicalMemory())/2
		spread = "runs"
		if fits && spec.Repeats >= size {
			spread = "repeats"
		}
	}
	if spread == "repeats" {
		sh = nil
		if t, name, _, err = readInput(in); err != nil {
			return fail(err)
		}
		dims, nnz = t.Dims, t.NNZ()
	}
	if err := checkLayers(&spec.Base, len(dims)); err != nil {
		return fail(err)
	}
	if rank == 0 {
		if err := checkOutDir(out, in.Input); err != nil {
			return fail(err)
		}
	} else {
		spec.Progress = nil
	}
	be, err := openDistBackend(c, in, stderrIf(rank == 0, stderr))
	if err != nil {
		return fail(err)
	}
	defer be.Close()
	var res *eval.Results
	if spread == "runs" {
		cl := &mpijob.Cluster{C: c}
		if res, err = eval.EvaluateOn(ctx, cl, sh, spec, be); err != nil {
			return fail(err)
		}
	} else {
		spec.Only = func(r int) bool { return r%size == rank }
		if res, err = eval.Evaluate(ctx, t, spec, be); err != nil {
			return fail(err)
		}
		// Every rank's runs, gathered in one process's order.
		js, err := json.Marshal(res.Runs)
		if err != nil {
			return fail(err)
		}
		all, counts := mpi.Allgatherv(c, js)
		var runs []eval.Run
		off := 0
		for _, n := range counts {
			var part []eval.Run
			if err := json.Unmarshal(all[off:off+int(n)], &part); err != nil {
				return fail(err)
			}
			runs = append(runs, part...)
			off += int(n)
		}
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].Repeat < runs[j].Repeat })
		res.Runs = runs
	}
	secs := []float64{res.Seconds}
	c.Allreduce(secs, mpi.Max)
	if rank == 0 {
		res.Seconds = secs[0]
		p := eval.Provenance{
			Input: name, Dims: dims, NNZ: nnz, Backend: be.Name(), Device: be.Device(),
			Methods: spec.Methods, Ratios: spec.Ratios, Baselines: spec.Baselines, Repeats: spec.Repeats, Base: eval.TrainingOf(spec.Base),
			Command: "dainx eval " + strings.Join(args, " "), Seconds: res.Seconds,
		}
		if err := res.WriteDir(out, p); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "dainx eval: wrote %s/{runs.csv,runs.json,summary.md,summary.json,rmse.png,runtime.png} (%d ranks, -spread %s, %s)\n", out, size, spread, c.Version())
	}
	c.Finalize()
	return exitOK
}
